# Italiano
asks-you = { $asker } ti chiede
asks-room = { $asker } chiede alla stanza
answered-by-you = { $answer }, da te
answered-by = { $answer }, da { $name }
typed-answer = «{ $text }»
expired = nessuna risposta, scaduta
cancelled = annullata
anyone-can-answer = chiunque nella stanza può rispondere
choose-answer = Scegli una risposta ({ $count })
choose-action = Scegli…
reply-action = Rispondi
reply-send = Invia
reply-placeholder = Scrivi una risposta
or-type-reply = o scrivi una risposta
fallback-title = Nuova domanda
fallback-body = Apri l’app per rispondere.
left-under-a-minute = meno di un minuto
left-minutes =
    { $n ->
        [one] { $n } min rimasto
       *[other] { $n } min rimasti
    }
left-hours =
    { $n ->
        [one] { $n } h rimasta
       *[other] { $n } h rimaste
    }
left-days =
    { $n ->
        [one] { $n } giorno rimasto
       *[other] { $n } giorni rimasti
    }
no-time-left = scaduta
answer-queued = { $answer }: in coda, invio appena online
answer-sending = { $answer }: invio…
answer-retrying = { $answer }: non ancora inviata ({ $error }); nuovo tentativo
answer-rejected = { $answer }: non accettata ({ $error })
answer-too-late = { $answer }: troppo tardi, già risolta
open-app-to-finish = Apri l’app per completare la risposta
channel-name = Domande
channel-description = Domande a cui rispondere dalla notifica
error-text-too-long = La tua risposta ha { $length } caratteri; al massimo { $max }. Apri l’app per accorciarla.
error-text-not-allowed = Questa domanda non accetta risposte scritte.
error-empty-text = Scrivi prima una risposta.
error-unknown-choice = Non è una delle risposte proposte.
error-not-an-answer = Apri l’app per rispondere.
