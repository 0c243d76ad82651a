# Français. Vouvoiement. Espace insécable (U+00A0) avant « : » et à
# l’intérieur des guillemets, espace fine insécable (U+202F) avant ; ? !
# (invisibles ici, vérifiés par un test) : la ponctuation ne passe jamais
# seule à la ligne. « Réponse » est féminin : les lignes d’état s’accordent
# avec elle, les lignes de résolution avec « la question ».

# Where: the notification's title (iOS title, Android content title, the push
# alert) and the feed cell's title, for a question asked of you alone.
# Subject: the asker ($asker, a person or an agent: avoid verbs that mark its
# gender). Max 30 characters besides $asker. « Question de … » would need
# the elision « d’ » before a name starting with a vowel (Alice, Ops Bot),
# which a placeable cannot make: the verb avoids it, as asks-room does.
asks-you = { $asker } vous pose une question

# Where: as asks-you, for a question anyone in the room may answer. Subject:
# the asker ($asker; avoid marking its gender). Max 34 characters besides
# $asker.
asks-room = { $asker } pose une question au salon

# Where: the resolution line: the iOS subtitle of the resolved notification,
# the Android notification's text, the feed cell. Subject: you, who answered;
# $answer is the chosen label or the quoted reply. A sentence: capitalised
# where the language capitalises sentences. Max 24 characters besides $answer.
answered-by-you = Vous avez répondu : { $answer }

# Where: as answered-by-you, when someone else answered. Subject: the person
# who answered ($name; avoid marking their gender); $answer as above. Max 24
# characters besides $name and $answer.
answered-by = { $name } a répondu : { $answer }

# Where: a typed reply ($text) quoted inside other lines (resolution, my
# answer's status). Subject: none (the reply itself, in the language's
# quotation marks). Max 4 characters besides $text.
typed-answer = « { $text } »

# Where: the resolution line (iOS subtitle, Android text, feed cell) of a
# question that ran out of time unanswered. Subject: the question. Capitalised
# where the language capitalises sentences. Max 30 characters.
expired = Expirée sans réponse

# Where: the resolution line of a question the asker withdrew. Subject: the
# question. Capitalised where the language capitalises sentences. Max 24
# characters.
cancelled = Annulée

# Where: the feed, under a pending room question. Subject: the people in the
# room. Max 48 characters.
anyone-can-answer = tout le monde dans le salon peut répondre

# Where: Android's list of choices (the reply field's label) and the feed's
# entry that opens the list, for 3 or 4 options; $count is how many (a
# plural). Subject: you (an instruction). Max 44 characters besides $count.
choose-answer = Choisir une réponse ({ $count ->
        [one] { $count } option
       *[other] { $count } options
    })

# Where: the Android notification button that opens the list of choices.
# Subject: you (an instruction). Max 12 characters.
choose-action = Choisir…

# Where: the notification button that opens the reply field (iOS text action,
# Android reply action). Subject: you (a button: a verb, as the platform's
# buttons read). Max 12 characters.
reply-action = Répondre

# Where: the send button of the reply field (iOS keyboard, the feed). Subject:
# you (a button: a verb). Max 10 characters.
reply-send = Envoyer

# Where: the reply field's placeholder when the asker gave none. Subject: you
# (an instruction). Max 28 characters.
reply-placeholder = Votre réponse

# Where: the feed, a hint below the buttons of a question that also takes a
# typed reply. Subject: you (an instruction). Max 32 characters.
or-type-reply = ou écrivez une réponse

# Where: the notification's title when the question itself cannot be shown (an
# encrypted push this phone cannot open, an unreadable payload). Subject: the
# question. Max 24 characters.
fallback-title = Nouvelle question

# Where: that notification's text. Subject: you (an instruction). Max 48
# characters.
fallback-body = Ouvrez l’app pour répondre.

# Where: the time remaining of a pending question (feed cell, the list of
# choices), under a minute. Subject: the time. Max 28 characters.
left-under-a-minute = moins d’une minute restante

# Where: the time remaining, in whole minutes ($n, 1 to 59; a plural).
# Subject: the time. Max 28 characters besides $n.
left-minutes =
    { $n ->
        [one] { $n } min restante
       *[other] { $n } min restantes
    }

# Where: the time remaining, in whole hours ($n, 1 to 23; a plural). Subject:
# the time. Max 28 characters besides $n.
left-hours =
    { $n ->
        [one] { $n } h restante
       *[other] { $n } h restantes
    }

# Where: the time remaining, in whole days ($n, 1 or more; a plural). Subject:
# the time. Max 28 characters besides $n.
left-days =
    { $n ->
        [one] { $n } jour restant
       *[other] { $n } jours restants
    }

# Where: the time remaining once the deadline has passed. Subject: the time
# (or the question). Max 28 characters.
no-time-left = délai écoulé

# Where: the status of my own answer: the feed cell and the notification after
# answering from the lock screen. Saved on the phone, to be sent once online.
# Subject: the answer ($answer, the label or quoted reply; feminine in de, fr,
# es, it, pt, ar, he). Max 50 characters besides $answer.
answer-queued = { $answer } : en attente, envoi dès que vous serez en ligne

# Where: as answer-queued, while it is being sent. Subject: the answer. Max 28
# characters besides $answer.
answer-sending = { $answer } : envoi en cours…

# Where: as answer-queued, after a failed attempt that will be retried. $cause
# says why, in words for people (never the raw error): offline (no
# connection), unreachable (the server did not answer), signed-out (pair the
# phone again to send), server-error (the server failed). Subject: the answer. Max
# 68 characters besides $answer.
answer-retrying =
    { $cause ->
        [offline] { $answer } : pas encore envoyée, vous êtes hors ligne ; nouvel essai prévu
        [signed-out] { $answer } : pas encore envoyée ; réassociez le téléphone pour l’envoyer
        [server-error] { $answer } : pas encore envoyée, erreur du serveur ; nouvel essai prévu
       *[unreachable] { $answer } : pas encore envoyée, serveur injoignable ; nouvel essai prévu
    }

# Where: as answer-queued, when the server refused the answer for good. $code
# is the server's HTTP status (422…), or none when unknown. Subject: the
# answer. Max 48 characters besides $answer and $code.
answer-rejected =
    { $code ->
        [none] { $answer } : refusée par le serveur
       *[other] { $answer } : refusée par le serveur (erreur { $code })
    }

# Where: as answer-queued, when the answer was not sent because the question
# was known only from a plain push and the server's question with that id says
# something else (someone may have forged the push). The feed now shows the
# real question. Subject: the answer. Max 80 characters besides $answer.
answer-question-changed = { $answer } : non envoyée, la question diffère de celle affichée ; relisez-la

# Where: as answer-queued, when the question closed before my answer arrived.
# $state says how: answered (by someone else), expired, cancelled, or closed
# (not known yet). Never say 'already answered' for an expired or cancelled
# question. Subject: the answer / the question. Max 56 characters besides
# $answer.
answer-too-late =
    { $state ->
        [answered] { $answer } : trop tard, quelqu’un d’autre a répondu
        [expired] { $answer } : trop tard, la question a expiré
        [cancelled] { $answer } : trop tard, la question a été annulée
       *[other] { $answer } : trop tard, la question est close
    }

# Where: the Android notification's text when a lock-screen reply needs the
# app (too long to send as is). Subject: you (an instruction). Max 48
# characters.
open-app-to-finish = Ouvrez l’app pour terminer votre réponse

# Where: the app's status line (above the feed, the account screen) when the
# server no longer takes this phone's sign-in (the token was revoked or has
# expired); answers wait on the phone until the person pairs again. Subject:
# you (an instruction). Two sentences. Max 100 characters.
sign-in-again = Votre connexion a expiré. Associez à nouveau ce téléphone pour envoyer vos réponses.

# Where: Android's notification settings: the name of this app's channel.
# Subject: the questions (a plural noun). Max 24 characters.
channel-name = Questions

# Where: Android's notification settings: the channel's description. Subject:
# the questions. Max 70 characters.
channel-description = Les questions auxquelles vous pouvez répondre depuis la notification

# Where: the notification's text when a typed reply is longer than the
# question allows; $length and $max count characters (both 2 or more).
# Subject: your reply. Max 100 characters besides $length and $max.
error-text-too-long = Votre réponse fait { $length } caractères, la limite est de { $max }. Ouvrez l’app pour la raccourcir.

# Where: the notification's text when a typed reply reached a question that
# takes none. Subject: the question. Max 60 characters.
error-text-not-allowed = Cette question n’accepte pas de réponse écrite.

# Where: the notification's text when the reply field was sent empty. Subject:
# you (an instruction). Max 48 characters.
error-empty-text = Écrivez d’abord une réponse.

# Where: the notification's text when the chosen answer is not one of the
# question's options. Subject: that answer. Max 60 characters.
error-unknown-choice = Cette réponse ne fait pas partie des options.

# Where: the notification's text when an action was not an answer. Subject:
# you (an instruction). Max 48 characters.
error-not-an-answer = Ouvrez l’app pour répondre.

# Where: the sign-in consent question (the server asks it when an agent signs
# in through OAuth or qp login --url): the asker's name in its title, inside
# asks-you, on the lock screen, the feed and the web. Subject: none (the name
# of the server's sign-in). Max 26 characters.
consent-asker = Connexion qp

# Where: the sign-in consent question's text (lock screen, feed, web). $client:
# verified (a client whose address $host was checked), unverified (a client
# that registered itself) or terminal (qp login in a terminal); $room: the
# room's name; $name: what the client calls itself, its claim, always quoted
# after the server's own words. Subject: the client (it), then you (Allow?).
# Max 190 characters besides $host, $room and $name.
consent-prompt =
    { $client ->
        [verified] Un client vérifié sur { $host } veut vous poser des questions dans le salon { $room }. Autoriser ? Il se présente comme « { $name } ».
        [terminal] Un terminal (qp login) veut vous poser des questions dans le salon { $room }. Autoriser ? Il se présente comme « { $name } », non vérifié.
       *[unverified] Un client non vérifié veut vous poser des questions dans le salon { $room }. Autoriser ? Il se présente comme « { $name } ».
    }

# Where: a sentence after consent-prompt: where the sign-in goes back to.
# $to: local (the computer the client runs on) or host ($host). Subject: the
# client (it). Max 72 characters besides $host.
consent-returns =
    { $to ->
        [local] Il se connecte sur l’ordinateur où il s’exécute (localhost).
       *[host] Il se connecte via { $host }.
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
        [verified] code { $code } · { $host }
        [terminal] code { $code }
       *[unverified] code { $code } · client non vérifié
    }

# Where: the consent question's button that lets the client ask, and the
# answer's line (answered-by-you). Subject: you (a button). Max 12 characters.
consent-allow = Autoriser

# Where: the consent question's button that refuses it, and the answer's
# line. Subject: you (a button). Max 12 characters.
consent-deny = Refuser

# Where: the pairing screen (phone and web responder) when pairing failed.
# $reason: not-a-code (what was scanned or typed is neither), no-server (a
# bare code without its server), invalid-code (unknown, used or expired),
# too-many-attempts (too many wrong codes from here: wait), unreachable (the
# server did not answer), refused (the server refused for another reason),
# storage-failed (the device could not keep its pairing). Subject: varies;
# then you (an instruction). Two sentences at most. Max 100 characters.
pair-failed =
    { $reason ->
        [not-a-code] Ce n’est ni un lien ni un code d’association.
        [no-server] Ce code ne dit pas quel serveur joindre : ouvrez plutôt le lien d’association.
        [invalid-code] Ce code est inconnu, déjà utilisé ou expiré. Demandez une nouvelle invitation.
        [too-many-attempts] Trop de codes erronés depuis cet appareil. Patientez quelques minutes, puis réessayez.
        [unreachable] Impossible de joindre le serveur. Vérifiez la connexion, puis réessayez.
       *[refused] Le serveur a refusé l’association. Réessayez plus tard.
        [storage-failed] Cet appareil n’a pas pu enregistrer l’association. Réessayez.
    }
