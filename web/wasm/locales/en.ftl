# The web responder's own words (around the feed, whose copy is qp-core's).
# English is the reference and every other language's fallback. What the
# phone says too (the app's name, "New question", why pairing failed, an
# answer's status) is not here: the page reads it from qp-core's copy, one
# message in one home. Each language's file starts with the header of its
# qp-core file, and its rules hold here (web/wasm/src/tests.rs checks them).
web-pair-heading = Pair this browser
web-pair-help = Open the pairing link you were sent on this device, or type its code.
web-pair-code = Pairing code
web-pair-button = Pair
web-pairing = Pairing…
web-signed-in = Signed in as
web-sign-out = Sign out
web-empty = No questions right now.
web-offline = Offline: your answers will be sent when you are back online.
web-notifications = Turn on notifications
web-notifications-on = Notifications are on
# Why notifications are not on when the server refused this browser's
# registration ($code: its HTTP status). Never the server's own English.
web-notifications-refused = Notifications are not on: the server did not accept this browser (error { $code }). Try again later.
web-close = Close
# What a screen reader announces when questions arrive: $what is qp-core's
# "New question", $title the cell's title (who asks), $prompt the question.
web-announce = { $what }: { $title }. { $prompt }
web-load-failed = Could not reach the server; retrying.
# An answer the server refused because this browser's sign-in ended
# (401): the phone's line, for a browser. $answer: the answer as qp-core
# words it.
web-answer-signed-out = { $answer }: not sent yet; pair this browser again to send it
# A pairing link opened: whose account it signs in to, before anything is
# done. $name: the account of the link; $current: the account this browser
# is signed in to now; $server: this server. Names are never translated.
web-link-checking = Checking the pairing link…
web-link-heading = Sign in as { $name }?
web-link-detail = This pairing link signs this browser in to { $server } as { $name }. Continue only if { $name } is you.
web-link-replace = This browser is signed in as { $current }. Continuing signs { $current } out of this browser and turns off notifications here.
web-link-again = This browser is already signed in as { $current }. Continuing replaces that sign-in.
web-link-accept = Sign in as { $name }
web-link-cancel = Cancel
web-link-stay = Stay signed in as { $current }
web-notifications-switched = Notifications were turned off when this browser changed accounts. Turn them on again for { $name } if you want them.
# The reply field: what is left as it is typed ($count: a number), and the
# reason a reply is refused here (the phones' words send the person to the
# app; here they are at the field). Why notifications could not be turned on.
web-text-too-long = Your reply is { $length } characters; the limit is { $max }. Shorten it, then send it again.
web-reply-left = Characters left: { $count }
web-reply-over = Characters over the limit: { $count }
web-notifications-blocked = Notifications are blocked for this site. Allow them in your browser’s site settings, then try again.
web-notifications-unreachable = Notifications are not on: the browser’s push service could not be reached. Check the connection, then try again.
# The server has no Web Push (GET /api/webpush/key says so): said instead
# of asking the browser for a permission that could bring nothing.
web-notifications-off-server = This server does not send notifications. Questions appear here while this page is open.
