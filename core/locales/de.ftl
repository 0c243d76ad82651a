# Deutsch
asks-you = { $asker } fragt dich
asks-room = { $asker } fragt den Raum
answered-by-you = { $answer }, von dir
answered-by = { $answer }, von { $name }
typed-answer = „{ $text }“
expired = keine Antwort, abgelaufen
cancelled = zurückgezogen
anyone-can-answer = alle im Raum können antworten
choose-answer = Antwort wählen ({ $count })
choose-action = Wählen…
reply-action = Antworten
reply-send = Senden
reply-placeholder = Antwort eingeben
or-type-reply = oder Antwort eingeben
fallback-title = Neue Frage
fallback-body = Öffne die App, um zu antworten.
left-under-a-minute = weniger als eine Minute übrig
left-minutes = noch { $n } Min.
left-hours = noch { $n } Std.
left-days =
    { $n ->
        [one] noch 1 Tag
       *[other] noch { $n } Tage
    }
no-time-left = abgelaufen
answer-queued = { $answer }: gespeichert, wird online gesendet
answer-sending = { $answer }: wird gesendet…
answer-retrying = { $answer }: noch nicht gesendet ({ $error }); neuer Versuch folgt
answer-rejected = { $answer }: nicht angenommen ({ $error })
answer-too-late = { $answer }: zu spät, schon beantwortet
open-app-to-finish = Öffne die App, um deine Antwort abzuschließen
channel-name = Fragen
channel-description = Fragen, die du in der Benachrichtigung beantworten kannst
error-text-too-long = Deine Antwort hat { $length } Zeichen; höchstens { $max } passen. Öffne die App, um sie zu kürzen.
error-text-not-allowed = Diese Frage nimmt keine getippte Antwort an.
error-empty-text = Tippe zuerst eine Antwort.
error-unknown-choice = Das ist keine der angebotenen Antworten.
error-not-an-answer = Öffne die App, um zu antworten.
