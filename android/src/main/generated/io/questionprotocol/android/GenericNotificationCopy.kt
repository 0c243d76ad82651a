// GENERATED from the Rust core's copy (core/locales) by
// core/tests/android_generic_copy.rs: do not edit. Regenerate with
//   QP_REGENERATE=1 cargo test -p qp-core --test android_generic_copy
// (the test, run by scripts/test rust and android/run-tests, fails when
// this file is not what the core makes of the commit).
//
// Only for when the native library cannot be loaded: every other path
// asks the core.
package io.questionprotocol.android

internal object GenericNotificationCopy {
    /** The core's questions channel id. */
    const val CHANNEL_ID = "qp.questions"
    /** The core's default importance of the channel. */
    const val CHANNEL_IMPORTANCE = android.app.NotificationManager.IMPORTANCE_HIGH
    /** The language every chain ends with. */
    const val FALLBACK_LANGUAGE = "en"
    /** Where Chinese without a script is written in Traditional (the
     *  core's negotiation: none is bundled). */
    val TRADITIONAL_CHINESE_REGIONS: Set<String> = setOf("TW", "HK", "MO")
    /** By bundled language tag: the generic notification's title and
     *  body, the channel's name and description. */
    val LINES: Map<String, GenericLines> = mapOf(
        "ar" to GenericLines(
            "سؤال جديد",
            "افتح التطبيق للإجابة.",
            "الأسئلة",
            "أسئلة يمكنك الإجابة عنها من الإشعار مباشرة",
        ),
        "de" to GenericLines(
            "Neue Frage",
            "Öffne die App, um zu antworten.",
            "Fragen",
            "Fragen, die du direkt in der Benachrichtigung beantworten kannst",
        ),
        "en" to GenericLines(
            "New question",
            "Open the app to answer.",
            "Questions",
            "Questions you can answer from the notification",
        ),
        "es" to GenericLines(
            "Nueva pregunta",
            "Abre la app para responder.",
            "Preguntas",
            "Preguntas que puedes responder desde la notificación",
        ),
        "fr" to GenericLines(
            "Nouvelle question",
            "Ouvrez l’app pour répondre.",
            "Questions",
            "Les questions auxquelles vous pouvez répondre depuis la notification",
        ),
        "he" to GenericLines(
            "שאלה חדשה",
            "יש לפתוח את האפליקציה כדי לענות.",
            "שאלות",
            "שאלות שאפשר לענות עליהן ישירות מההתראה",
        ),
        "it" to GenericLines(
            "Nuova domanda",
            "Apri l’app per rispondere.",
            "Domande",
            "Domande a cui puoi rispondere dalla notifica",
        ),
        "ja" to GenericLines(
            "新しい質問",
            "アプリを開いて回答してください。",
            "質問",
            "通知から直接回答できる質問",
        ),
        "pt-BR" to GenericLines(
            "Nova pergunta",
            "Abra o app para responder.",
            "Perguntas",
            "Perguntas que você pode responder pela notificação",
        ),
        "zh-Hans" to GenericLines(
            "新问题",
            "打开应用即可回答。",
            "待答问题",
            "可以直接在通知中回答的问题",
        ),
    )
}

internal class GenericLines(
    val title: String,
    val body: String,
    val channelName: String,
    val channelDescription: String,
)
