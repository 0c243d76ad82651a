# العربية (right to left; embedded names and labels are isolated by the core)
asks-you = { $asker } يسألك
asks-room = { $asker } يسأل الغرفة
answered-by-you = { $answer }، بواسطتك
answered-by = { $answer }، بواسطة { $name }
typed-answer = «{ $text }»
expired = لا إجابة، انتهت الصلاحية
cancelled = أُلغي
anyone-can-answer = يمكن لأي شخص في الغرفة الإجابة
choose-answer = اختر إجابة ({ $count })
choose-action = اختر…
reply-action = رد
reply-send = إرسال
reply-placeholder = اكتب ردًا
or-type-reply = أو اكتب ردًا
fallback-title = سؤال جديد
fallback-body = افتح التطبيق للإجابة.
left-under-a-minute = أقل من دقيقة متبقية
left-minutes =
    { $n ->
        [zero] لا دقائق متبقية
        [one] دقيقة واحدة متبقية
        [two] دقيقتان متبقيتان
        [few] { $n } دقائق متبقية
        [many] { $n } دقيقة متبقية
       *[other] { $n } دقيقة متبقية
    }
left-hours =
    { $n ->
        [zero] لا ساعات متبقية
        [one] ساعة واحدة متبقية
        [two] ساعتان متبقيتان
        [few] { $n } ساعات متبقية
        [many] { $n } ساعة متبقية
       *[other] { $n } ساعة متبقية
    }
left-days =
    { $n ->
        [zero] لا أيام متبقية
        [one] يوم واحد متبقٍ
        [two] يومان متبقيان
        [few] { $n } أيام متبقية
        [many] { $n } يومًا متبقيًا
       *[other] { $n } يوم متبقٍ
    }
no-time-left = انتهت الصلاحية
answer-queued = { $answer }: في الانتظار، يُرسل عند الاتصال
answer-sending = { $answer }: جارٍ الإرسال…
answer-retrying = { $answer }: لم يُرسل بعد ({ $error })؛ ستُعاد المحاولة
answer-rejected = { $answer }: لم يُقبل ({ $error })
answer-too-late = { $answer }: فات الأوان، تمت الإجابة
open-app-to-finish = افتح التطبيق لإكمال إجابتك
channel-name = الأسئلة
channel-description = أسئلة يمكنك الإجابة عنها من الإشعار
error-text-too-long = ردك { $length } حرفًا؛ الحد الأقصى { $max }. افتح التطبيق لتقصيره.
error-text-not-allowed = هذا السؤال لا يقبل ردًا مكتوبًا.
error-empty-text = اكتب ردًا أولًا.
error-unknown-choice = هذه ليست من الإجابات المعروضة.
error-not-an-answer = افتح التطبيق للإجابة.
