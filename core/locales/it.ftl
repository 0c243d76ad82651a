# Italiano, con il tu. «Risposta» è femminile: le righe di stato si
# accordano con lei, quelle di esito con «la domanda».

# Where: the notification's title (iOS title, Android content title, the push
# alert) and the feed cell's title, for a question asked of you alone.
# Subject: the asker ($asker, a person or an agent: avoid verbs that mark its
# gender). Max 30 characters besides $asker.
asks-you = { $asker } ha una domanda per te

# Where: as asks-you, for a question anyone in the room may answer. Subject:
# the asker ($asker; avoid marking its gender). Max 34 characters besides
# $asker.
asks-room = { $asker } ha una domanda per la stanza

# Where: the resolution line: the iOS subtitle of the resolved notification,
# the Android notification's text, the feed cell. Subject: you, who answered;
# $answer is the chosen label or the quoted reply. A sentence: capitalised
# where the language capitalises sentences. Max 24 characters besides $answer.
answered-by-you = Hai risposto: { $answer }

# Where: as answered-by-you, when someone else answered. Subject: the person
# who answered ($name; avoid marking their gender); $answer as above. Max 24
# characters besides $name and $answer.
answered-by = { $name } ha risposto: { $answer }

# Where: a typed reply ($text) quoted inside other lines (resolution, my
# answer's status). Subject: none (the reply itself, in the language's
# quotation marks). Max 4 characters besides $text.
typed-answer = «{ $text }»

# Where: the resolution line (iOS subtitle, Android text, feed cell) of a
# question that ran out of time unanswered. Subject: the question. Capitalised
# where the language capitalises sentences. Max 30 characters.
expired = Scaduta senza risposta

# Where: the resolution line of a question the asker withdrew. Subject: the
# question. Capitalised where the language capitalises sentences. Max 24
# characters.
cancelled = Annullata

# Where: the feed, under a pending room question. Subject: the people in the
# room. Max 48 characters.
anyone-can-answer = chiunque nella stanza può rispondere

# Where: Android's list of choices (the reply field's label) and the feed's
# entry that opens the list, for 3 or 4 options; $count is how many (a
# plural). Subject: you (an instruction). Max 44 characters besides $count.
choose-answer = Scegli una risposta ({ $count ->
        [one] 1 opzione
       *[other] { $count } opzioni
    })

# Where: the Android notification button that opens the list of choices.
# Subject: you (an instruction). Max 12 characters.
choose-action = Scegli…

# Where: the notification button that opens the reply field (iOS text action,
# Android reply action). Subject: you (a button: a verb, as the platform's
# buttons read). Max 12 characters.
reply-action = Rispondi

# Where: the send button of the reply field (iOS keyboard, the feed). Subject:
# you (a button: a verb). Max 10 characters.
reply-send = Invia

# Where: the reply field's placeholder when the asker gave none. Subject: you
# (an instruction). Max 28 characters.
reply-placeholder = Scrivi una risposta

# Where: the feed, a hint below the buttons of a question that also takes a
# typed reply. Subject: you (an instruction). Max 32 characters.
or-type-reply = o scrivi una risposta

# Where: the notification's title when the question itself cannot be shown (an
# encrypted push this phone cannot open, an unreadable payload). Subject: the
# question. Max 24 characters.
fallback-title = Nuova domanda

# Where: that notification's text. Subject: you (an instruction). Max 48
# characters.
fallback-body = Apri l’app per rispondere.

# Where: the time remaining of a pending question (feed cell, the list of
# choices), under a minute. Subject: the time. Max 28 characters.
left-under-a-minute = manca meno di un minuto

# Where: the time remaining, in whole minutes ($n, 1 to 59; a plural).
# Subject: the time. Max 28 characters besides $n.
left-minutes =
    { $n ->
        [one] manca 1 min
       *[other] mancano { $n } min
    }

# Where: the time remaining, in whole hours ($n, 1 to 23; a plural). Subject:
# the time. Max 28 characters besides $n.
left-hours =
    { $n ->
        [one] manca 1 ora
       *[other] mancano { $n } ore
    }

# Where: the time remaining, in whole days ($n, 1 or more; a plural). Subject:
# the time. Max 28 characters besides $n.
left-days =
    { $n ->
        [one] manca 1 giorno
       *[other] mancano { $n } giorni
    }

# Where: the time remaining once the deadline has passed. Subject: the time
# (or the question). Max 28 characters.
no-time-left = tempo scaduto

# Where: the status of my own answer: the feed cell and the notification after
# answering from the lock screen. Saved on the phone, to be sent once online.
# Subject: the answer ($answer, the label or quoted reply; feminine in de, fr,
# es, it, pt, ar, he). Max 50 characters besides $answer.
answer-queued = { $answer }: in coda, verrà inviata appena sarai online

# Where: as answer-queued, while it is being sent. Subject: the answer. Max 28
# characters besides $answer.
answer-sending = { $answer }: invio in corso…

# Where: as answer-queued, after a failed attempt that will be retried. $cause
# says why, in words for people (never the raw error): offline (no
# connection), unreachable (the server did not answer), signed-out (pair the
# phone again to send), server-error (the server failed). Subject: the answer. Max
# 68 characters besides $answer.
answer-retrying =
    { $cause ->
        [offline] { $answer }: non ancora inviata, sei offline; riproveremo
        [signed-out] { $answer }: non ancora inviata; associa di nuovo il telefono per inviarla
        [server-error] { $answer }: non ancora inviata, errore del server; riproveremo
       *[unreachable] { $answer }: non ancora inviata, server non raggiungibile; riproveremo
    }

# Where: as answer-queued, when the server refused the answer for good. $code
# is the server's HTTP status (422…), or none when unknown. Subject: the
# answer. Max 48 characters besides $answer and $code.
answer-rejected =
    { $code ->
        [none] { $answer }: rifiutata dal server
       *[other] { $answer }: rifiutata dal server (errore { $code })
    }

# Where: as answer-queued, when the answer was not sent because the question
# was known only from a plain push and the server's question with that id says
# something else (someone may have forged the push). The feed now shows the
# real question. Subject: the answer. Max 80 characters besides $answer.
answer-question-changed = { $answer }: non inviata, la domanda è diversa da quella mostrata; rileggila

# Where: as answer-queued, when the question closed before my answer arrived.
# $state says how: answered (by someone else), expired, cancelled, or closed
# (not known yet). Never say 'already answered' for an expired or cancelled
# question. Subject: the answer / the question. Max 56 characters besides
# $answer.
answer-too-late =
    { $state ->
        [answered] { $answer }: troppo tardi, ha già risposto qualcun altro
        [expired] { $answer }: troppo tardi, la domanda è scaduta
        [cancelled] { $answer }: troppo tardi, la domanda è stata annullata
       *[other] { $answer }: troppo tardi, la domanda è chiusa
    }

# Where: the Android notification's text when a lock-screen reply needs the
# app (too long to send as is). Subject: you (an instruction). Max 48
# characters.
open-app-to-finish = Apri l’app per completare la risposta

# Where: the app's status line (above the feed, the account screen) when the
# server no longer takes this phone's sign-in (the token was revoked or has
# expired); answers wait on the phone until the person pairs again. Subject:
# you (an instruction). Two sentences. Max 100 characters.
sign-in-again = La tua sessione è terminata. Associa di nuovo questo telefono per inviare le risposte.

# Where: Android's notification settings: the name of this app's channel.
# Subject: the questions (a plural noun). Max 24 characters.
channel-name = Domande

# Where: Android's notification settings: the channel's description. Subject:
# the questions. Max 70 characters.
channel-description = Domande a cui puoi rispondere dalla notifica

# Where: the notification's text when a typed reply is longer than the
# question allows; $length and $max count characters (both 2 or more).
# Subject: your reply. Max 100 characters besides $length and $max.
error-text-too-long = La tua risposta ha { $length } caratteri, il massimo è { $max }. Apri l’app per accorciarla.

# Where: the notification's text when a typed reply reached a question that
# takes none. Subject: the question. Max 60 characters.
error-text-not-allowed = Questa domanda non accetta risposte scritte.

# Where: the notification's text when the reply field was sent empty. Subject:
# you (an instruction). Max 48 characters.
error-empty-text = Scrivi prima una risposta.

# Where: the notification's text when the chosen answer is not one of the
# question's options. Subject: that answer. Max 60 characters.
error-unknown-choice = Questa risposta non è tra le opzioni.

# Where: the notification's text when an action was not an answer. Subject:
# you (an instruction). Max 48 characters.
error-not-an-answer = Apri l’app per rispondere.

# Where: the sign-in consent question (the server asks it when an agent signs
# in through OAuth or qp login --url): the asker's name in its title, inside
# asks-you, on the lock screen, the feed and the web. Subject: none (the name
# of the server's sign-in). Max 26 characters.
consent-asker = L’accesso a qp

# Where: the sign-in consent question's text (lock screen, feed, web). $client:
# verified (a client whose address $host was checked), unverified (a client
# that registered itself) or terminal (qp login in a terminal); $room: the
# room's name; $name: what the client calls itself, its claim, always quoted
# after the server's own words. Subject: the client (it), then you (Allow?).
# Max 190 characters besides $host, $room and $name.
consent-prompt =
    { $client ->
        [verified] Un client verificato su { $host } vuole farti domande in { $room }. Consentire? Si presenta come «{ $name }».
        [terminal] Un terminale (qp login) vuole farti domande in { $room }. Consentire? Si presenta come «{ $name }», non verificato.
       *[unverified] Un client non verificato vuole farti domande in { $room }. Consentire? Si presenta come «{ $name }».
    }

# Where: a sentence after consent-prompt: where the sign-in goes back to.
# $to: local (the computer the client runs on) or host ($host). Subject: the
# client (it). Max 72 characters besides $host.
consent-returns =
    { $to ->
        [local] Accede dal computer su cui è in esecuzione (localhost).
       *[host] Accede tramite { $host }.
    }

# Where: consent-prompt followed by consent-returns ($prompt, $returns): how
# two sentences follow each other. Subject: none. Max 2 characters besides
# $prompt and $returns.
consent-prompt-and-return = { $prompt } { $returns }

# Where: the consent question's context line (the lock screen's subtitle):
# the code to compare ($code) with the one shown where the sign-in started,
# then who asks. $client as in consent-prompt. Subject: none (a label). Max
# 34 characters besides $code and $host.
consent-context =
    { $client ->
        [verified] codice { $code } · { $host }
        [terminal] codice { $code }
       *[unverified] codice { $code } · client non verificato
    }

# Where: the consent question's button that lets the client ask, and the
# answer's line (answered-by-you). Subject: you (a button). Max 12 characters.
consent-allow = Consenti

# Where: the consent question's button that refuses it, and the answer's
# line. Subject: you (a button). Max 12 characters.
consent-deny = Rifiuta

# Where: the pairing screen (phone and web responder) when pairing failed.
# $reason: not-a-code (what was scanned or typed is neither), no-server (a
# bare code without its server), invalid-code (unknown, used or expired),
# too-many-attempts (too many wrong codes from here: wait), unreachable (the
# server did not answer), refused (the server refused for another reason),
# storage-failed (the device could not keep its pairing). Subject: varies;
# then you (an instruction). Two sentences at most. Max 100 characters.
pair-failed =
    { $reason ->
        [not-a-code] Questo non è un link né un codice di associazione.
        [no-server] A questo codice manca il server: apri invece il link di associazione.
        [invalid-code] Questo codice è sconosciuto, già usato o scaduto. Chiedi un nuovo invito.
        [too-many-attempts] Troppi codici errati da questa rete. Aspetta qualche minuto, poi riprova.
        [unreachable] Impossibile raggiungere il server. Controlla la connessione e riprova.
       *[refused] Il server ha rifiutato l’associazione. Riprova più tardi.
        [storage-failed] Questo dispositivo non è riuscito a salvare l’associazione. Riprova.
    }
