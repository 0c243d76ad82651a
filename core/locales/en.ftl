# English: the reference text and the fallback of every other language.
# Placeables: $asker, $name (people and agents), $answer, $text (the asker's
# labels and the typed reply), $cause, $code, $state (selectors), $count,
# $n, $length, $max. Names and labels are inserted as they are, isolated
# by the core where directions can mix; never translate them.
# Each message's comment says where it appears, its grammatical subject
# and its maximum length (a test holds every language to it).

# Where: the notification's title (iOS title, Android content title, the push
# alert) and the feed cell's title, for a question asked of you alone.
# Subject: the asker ($asker, a person or an agent: avoid verbs that mark its
# gender). Max 30 characters besides $asker.
asks-you = { $asker } asks you

# Where: as asks-you, for a question anyone in the room may answer. Subject:
# the asker ($asker; avoid marking its gender). Max 34 characters besides
# $asker.
asks-room = { $asker } asks the room

# Where: the resolution line: the iOS subtitle of the resolved notification,
# the Android notification's text, the feed cell. Subject: you, who answered;
# $answer is the chosen label or the quoted reply. A sentence: capitalised
# where the language capitalises sentences. Max 24 characters besides $answer.
answered-by-you = You answered: { $answer }

# Where: as answered-by-you, when someone else answered. Subject: the person
# who answered ($name; avoid marking their gender); $answer as above. Max 24
# characters besides $name and $answer.
answered-by = { $name } answered: { $answer }

# Where: a typed reply ($text) quoted inside other lines (resolution, my
# answer's status). Subject: none (the reply itself, in the language's
# quotation marks). Max 4 characters besides $text.
typed-answer = “{ $text }”

# Where: the resolution line (iOS subtitle, Android text, feed cell) of a
# question that ran out of time unanswered. Subject: the question. Capitalised
# where the language capitalises sentences. Max 30 characters.
expired = Expired with no answer

# Where: the resolution line of a question the asker withdrew. Subject: the
# question. Capitalised where the language capitalises sentences. Max 24
# characters.
cancelled = Cancelled

# Where: the feed, under a pending room question. Subject: the people in the
# room. Max 48 characters.
anyone-can-answer = anyone in the room can answer

# Where: Android's list of choices (the reply field's label) and the feed's
# entry that opens the list, for 3 or 4 options; $count is how many (a
# plural). Subject: you (an instruction). Max 44 characters besides $count.
choose-answer = Choose an answer ({ $count ->
        [one] 1 option
       *[other] { $count } options
    })

# Where: the Android notification button that opens the list of choices.
# Subject: you (an instruction). Max 12 characters.
choose-action = Choose…

# Where: the notification button that opens the reply field (iOS text action,
# Android reply action). Subject: you (a button: a verb, as the platform's
# buttons read). Max 12 characters.
reply-action = Reply

# Where: the send button of the reply field (iOS keyboard, the feed). Subject:
# you (a button: a verb). Max 10 characters.
reply-send = Send

# Where: the reply field's placeholder when the asker gave none. Subject: you
# (an instruction). Max 28 characters.
reply-placeholder = Type a reply

# Where: the feed, a hint below the buttons of a question that also takes a
# typed reply. Subject: you (an instruction). Max 32 characters.
or-type-reply = or type a reply

# Where: the notification's title when the question itself cannot be shown (an
# encrypted push this phone cannot open, an unreadable payload). Subject: the
# question. Max 24 characters.
fallback-title = New question

# Where: that notification's text. Subject: you (an instruction). Max 48
# characters.
fallback-body = Open the app to answer.

# Where: the time remaining of a pending question (feed cell, the list of
# choices), under a minute. Subject: the time. Max 28 characters.
left-under-a-minute = less than a minute left

# Where: the time remaining, in whole minutes ($n, 1 to 59; a plural).
# Subject: the time. Max 28 characters besides $n.
left-minutes = { $n } min left

# Where: the time remaining, in whole hours ($n, 1 to 23; a plural). Subject:
# the time. Max 28 characters besides $n.
left-hours = { $n } h left

# Where: the time remaining, in whole days ($n, 1 or more; a plural). Subject:
# the time. Max 28 characters besides $n.
left-days =
    { $n ->
        [one] 1 day left
       *[other] { $n } days left
    }

# Where: the time remaining once the deadline has passed. Subject: the time
# (or the question). Max 28 characters.
no-time-left = expired

# Where: the status of my own answer: the feed cell and the notification after
# answering from the lock screen. Saved on the phone, to be sent once online.
# Subject: the answer ($answer, the label or quoted reply; feminine in de, fr,
# es, it, pt, ar, he). Max 50 characters besides $answer.
answer-queued = { $answer }: queued, will send when you’re online

# Where: as answer-queued, while it is being sent. Subject: the answer. Max 28
# characters besides $answer.
answer-sending = { $answer }: sending…

# Where: as answer-queued, after a failed attempt that will be retried. $cause
# says why, in words for people (never the raw error): offline (no
# connection), unreachable (the server did not answer), signed-out (pair the
# phone again to send), server-error (the server failed). Subject: the answer. Max
# 68 characters besides $answer.
answer-retrying =
    { $cause ->
        [offline] { $answer }: not sent yet, you’re offline; will retry
        [signed-out] { $answer }: not sent yet; pair this phone again to send it
        [server-error] { $answer }: not sent yet, server error; will retry
       *[unreachable] { $answer }: not sent yet, server unreachable; will retry
    }

# Where: as answer-queued, when the server refused the answer for good. $code
# is the server's HTTP status (422…), or none when unknown. Subject: the
# answer. Max 48 characters besides $answer and $code.
answer-rejected =
    { $code ->
        [none] { $answer }: refused by the server
       *[other] { $answer }: refused by the server (error { $code })
    }

# Where: as answer-queued, when the answer was not sent because the question
# was known only from a plain push and the server's question with that id says
# something else (someone may have forged the push). The feed now shows the
# real question. Subject: the answer. Max 80 characters besides $answer.
answer-question-changed = { $answer }: not sent, the question differs from what was shown; read it again

# Where: as answer-queued, when the question closed before my answer arrived.
# $state says how: answered (by someone else), expired, cancelled, or closed
# (not known yet). Never say 'already answered' for an expired or cancelled
# question. Subject: the answer / the question. Max 56 characters besides
# $answer.
answer-too-late =
    { $state ->
        [answered] { $answer }: too late, someone else answered
        [expired] { $answer }: too late, the question expired
        [cancelled] { $answer }: too late, the question was cancelled
       *[other] { $answer }: too late, question closed
    }

# Where: the Android notification's text when a lock-screen reply needs the
# app (too long to send as is). Subject: you (an instruction). Max 48
# characters.
open-app-to-finish = Open the app to finish your answer

# Where: the app's status line (above the feed, the account screen) when the
# server no longer takes this phone's sign-in (the token was revoked or has
# expired); answers wait on the phone until the person pairs again. Subject:
# you (an instruction). Two sentences. Max 100 characters.
sign-in-again = Your sign-in has ended. Pair this phone again to send your answers.

# Where: Android's notification settings: the name of this app's channel.
# Subject: the questions (a plural noun). Max 24 characters.
channel-name = Questions

# Where: Android's notification settings: the channel's description. Subject:
# the questions. Max 70 characters.
channel-description = Questions you can answer from the notification

# Where: the notification's text when a typed reply is longer than the
# question allows; $length and $max count characters (both 2 or more).
# Subject: your reply. Max 100 characters besides $length and $max.
error-text-too-long = Your reply is { $length } characters; the limit is { $max }. Open the app to shorten it.

# Where: the notification's text when a typed reply reached a question that
# takes none. Subject: the question. Max 60 characters.
error-text-not-allowed = This question doesn’t accept typed replies.

# Where: the notification's text when the reply field was sent empty. Subject:
# you (an instruction). Max 48 characters.
error-empty-text = Type a reply first.

# Where: the notification's text when the chosen answer is not one of the
# question's options. Subject: that answer. Max 60 characters.
error-unknown-choice = That answer isn’t one of the options.

# Where: the notification's text when an action was not an answer. Subject:
# you (an instruction). Max 48 characters.
error-not-an-answer = Open the app to answer.

# Where: the sign-in consent question (the server asks it when an agent signs
# in through OAuth or qp login --url): the asker's name in its title, inside
# asks-you, on the lock screen, the feed and the web. Subject: none (the name
# of the server's sign-in). Max 26 characters.
consent-asker = qp sign-in

# Where: the sign-in consent question's text (lock screen, feed, web). $client:
# verified (a client whose address $host was checked), unverified (a client
# that registered itself) or terminal (qp login in a terminal); $room: the
# room's name; $name: what the client calls itself, its claim, always quoted
# after the server's own words. Subject: the client (it), then you (Allow?).
# Max 190 characters besides $host, $room and $name.
consent-prompt =
    { $client ->
        [verified] A client verified at { $host } wants to ask you questions in { $room }. Allow? It calls itself “{ $name }”.
        [terminal] A terminal (qp login) wants to ask you questions in { $room }. Allow? It calls itself “{ $name }”, unverified.
       *[unverified] An unverified client wants to ask you questions in { $room }. Allow? It calls itself “{ $name }”.
    }

# Where: a sentence after consent-prompt: where the sign-in goes back to.
# $to: local (the computer the client runs on) or host ($host). Subject: the
# client (it). Max 72 characters besides $host.
consent-returns =
    { $to ->
        [local] It signs in on the computer it runs on (localhost).
       *[host] It signs in at { $host }.
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
       *[unverified] code { $code } · unverified client
    }

# Where: the consent question's button that lets the client ask, and the
# answer's line (answered-by-you). Subject: you (a button). Max 12 characters.
consent-allow = Allow

# Where: the consent question's button that refuses it, and the answer's
# line. Subject: you (a button). Max 12 characters.
consent-deny = Deny

# Where: the pairing screen (phone and web responder) when pairing failed.
# $reason: not-a-code (what was scanned or typed is neither), no-server (a
# bare code without its server), invalid-code (unknown, used or expired),
# too-many-attempts (too many wrong codes from here: wait), unreachable (the
# server did not answer), refused (the server refused for another reason),
# storage-failed (the device could not keep its pairing). Subject: varies;
# then you (an instruction). Two sentences at most. Max 100 characters.
pair-failed =
    { $reason ->
        [not-a-code] That is not a pairing link or code.
        [no-server] That code needs its server: open the pairing link instead.
        [invalid-code] That code is unknown, already used or expired. Ask for a new invite.
        [too-many-attempts] Too many wrong codes from here. Wait a few minutes, then try again.
        [unreachable] The server could not be reached. Check the connection and try again.
       *[refused] The server refused the pairing. Try again later.
        [storage-failed] This device could not store its pairing. Try again.
    }
