# The web responder's own words (around the feed, whose copy is qp-core's).
# English is the reference and every other language's fallback.
web-app-name = Questions
web-pair-heading = Pair this browser
web-pair-help = Open the pairing link you were sent on this device, or type its code.
web-pair-code = Pairing code
web-pair-button = Pair
web-pairing = Pairing…
web-pair-failed = That code did not work. Ask for a new invite.
web-signed-in = Signed in as
web-sign-out = Sign out
web-empty = No questions right now.
web-offline = Offline: your answers will be sent when you are back online.
web-notifications = Turn on notifications
web-notifications-on = Notifications are on
web-close = Close
web-new-question = New question
web-answer-failed = Not sent; try again.
web-load-failed = Could not reach the server; retrying.
