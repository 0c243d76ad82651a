# עברית (מימין לשמאל). שמות ותוויות משובצים מבודדים על ידי הליבה, ומשפט
# שמתחיל בטקסט מבודד מקבל RLM (U+200F) מהליבה. "תשובה" בלשון נקבה: שורות
# המצב מתאימות לה (תישלח, לא נשלחה, נדחתה). בלי צורות לוכסן (שואל/ת).
web-pair-heading = צימוד הדפדפן הזה
web-pair-help = יש לפתוח במכשיר הזה את קישור הצימוד שקיבלת, או להקליד את הקוד שלו.
web-pair-code = קוד צימוד
web-pair-button = צימוד
web-pairing = מתבצע צימוד…
web-signed-in = החשבון המחובר:
web-sign-out = התנתקות
web-empty = אין שאלות כרגע.
web-offline = אין חיבור: התשובות יישלחו כשהחיבור יחזור.
web-notifications = הפעלת התראות
web-notifications-on = ההתראות מופעלות
web-notifications-refused = ההתראות לא הופעלו: השרת לא קיבל את הדפדפן הזה (שגיאה { $code }). יש לנסות שוב מאוחר יותר.
web-close = סגירה
web-announce = { $what }: { $title }. { $prompt }
web-load-failed = אין גישה לשרת; ננסה שוב.
web-answer-signed-out = { $answer }: עדיין לא נשלחה; יש לצמד את הדפדפן הזה מחדש כדי לשלוח אותה
web-link-checking = בודקים את קישור הצימוד…
web-link-heading = להתחבר בתור { $name }?
web-link-detail = קישור הצימוד הזה מחבר את הדפדפן הזה אל { $server } בתור { $name }. יש להמשיך רק אם { $name } הוא החשבון שלך.
web-link-replace = הדפדפן הזה מחובר בתור { $current }. המשך ינתק את { $current } מהדפדפן הזה ויכבה כאן את ההתראות.
web-link-again = הדפדפן הזה כבר מחובר בתור { $current }. המשך יחליף את החיבור הזה.
web-link-accept = התחברות בתור { $name }
web-link-cancel = ביטול
web-link-stay = להישאר בחשבון של { $current }
web-notifications-switched = ההתראות כובו כשהדפדפן הזה החליף חשבון. אפשר להפעיל אותן שוב עבור { $name } אם רוצים.
web-text-too-long = התשובה באורך { $length } תווים, והמקסימום הוא { $max }. יש לקצר אותה ולשלוח שוב.
web-reply-left = תווים שנותרו: { $count }
web-reply-over = תווים מעבר למגבלה: { $count }
web-notifications-blocked = ההתראות חסומות באתר הזה. יש לאשר אותן בהגדרות האתר בדפדפן ולנסות שוב.
web-notifications-unreachable = ההתראות לא הופעלו: אין גישה לשירות ההתראות של הדפדפן. יש לבדוק את החיבור ולנסות שוב.
web-notifications-off-server = השרת הזה לא שולח התראות. השאלות מופיעות כאן כל עוד הדף הזה פתוח.
