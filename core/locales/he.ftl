# עברית (right to left; embedded names and labels are isolated by the core)
asks-you = { $asker } שואל/ת אותך
asks-room = { $asker } שואל/ת את החדר
answered-by-you = { $answer }, על ידך
answered-by = { $answer }, על ידי { $name }
typed-answer = ״{ $text }״
expired = אין תשובה, פג תוקף
cancelled = בוטל
anyone-can-answer = כל מי שבחדר יכול לענות
choose-answer = בחירת תשובה ({ $count })
choose-action = בחירה…
reply-action = תשובה
reply-send = שליחה
reply-placeholder = הקלדת תשובה
or-type-reply = או הקלדת תשובה
fallback-title = שאלה חדשה
fallback-body = יש לפתוח את האפליקציה כדי לענות.
left-under-a-minute = נותרה פחות מדקה
left-minutes =
    { $n ->
        [one] נותרה דקה אחת
        [two] נותרו שתי דקות
       *[other] נותרו { $n } דקות
    }
left-hours =
    { $n ->
        [one] נותרה שעה אחת
        [two] נותרו שעתיים
       *[other] נותרו { $n } שעות
    }
left-days =
    { $n ->
        [one] נותר יום אחד
        [two] נותרו יומיים
       *[other] נותרו { $n } ימים
    }
no-time-left = פג תוקף
answer-queued = { $answer }: בתור, יישלח כשיהיה חיבור
answer-sending = { $answer }: נשלח…
answer-retrying = { $answer }: עדיין לא נשלח ({ $error }); ננסה שוב
answer-rejected = { $answer }: לא התקבל ({ $error })
answer-too-late = { $answer }: מאוחר מדי, כבר נענה
open-app-to-finish = יש לפתוח את האפליקציה כדי לסיים את התשובה
channel-name = שאלות
channel-description = שאלות שאפשר לענות עליהן מההתראה
error-text-too-long = התשובה שלך באורך { $length } תווים; המקסימום הוא { $max }. יש לפתוח את האפליקציה כדי לקצר אותה.
error-text-not-allowed = השאלה הזו לא מקבלת תשובה מוקלדת.
error-empty-text = יש להקליד תשובה קודם.
error-unknown-choice = זו לא אחת מהתשובות המוצעות.
error-not-an-answer = יש לפתוח את האפליקציה כדי לענות.
