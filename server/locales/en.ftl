# The sign-in pages' words (an MCP client's OAuth sign-in, `qp login`):
# the authorization page, the page that waits for the phone, the device
# page, the status lines and the refusals. English is the reference and
# every other language's fallback. Placeables are names and codes, never
# translated: $name a person's name, $room a room's name, $host a host,
# $code the code shown on the phone, $allow and $deny the consent's
# buttons as the phone shows them, $minutes a number, $command a command.

signin-connect-title = Connect to qp
signin-verified-client = A client verified at { $host } wants to ask you questions. It calls itself “{ $name }”.
signin-unverified-client = An unverified client wants to ask you questions. It calls itself “{ $name }”.
signin-self-named = (it named itself)
signin-account = This browser is signed in to qp as { $name }: the question goes to their phone.
signin-change-account = Not { $name }? Ask another account
signin-ask-named = Ask { $name } on their phone
signin-user-label = Your user id or name
signin-room-label = The room it may ask in (its code)
signin-ask-me = Ask me on my phone
signin-phone-hint = You will get a question on your phone: tap { $allow } to connect, { $deny } to refuse.

signin-check-title = Check your phone
signin-asked = We asked { $name } on their phone whether to allow this in { $room }. This page continues as soon as you answer (within { $minutes } min).
signin-code = The question shows the code { $code }: tap { $allow } only if it is the one on this page, a page of this server that you opened yourself from the app you are connecting. Someone else's page showing you a code is no reason to allow.
signin-answer-here = You are signed in to qp on this browser as { $name }: you may answer here instead.
signin-buttons-hint = The buttons turn on a moment after the page appears.
signin-no-longer-signed-in = This browser is no longer signed in to qp: answer on your phone.
signin-answer-failed = That answer did not go through: answer on your phone, or try again.

signin-denied = Denied on the phone. Returning to the app.
signin-expired = The question expired before it was answered. Start again from the app.
signin-used = This request was already completed.
signin-allowed = Allowed. Returning to the app.

signin-device-title = Approve on your phone
signin-device-body = The person named by { $command } got a question on their phone with the same code the terminal shows. Tap { $allow } there to sign the terminal in.

signin-error-title = This sign-in cannot go on
signin-error-not-found = Nobody of that id or name is in that room. Give your user id (or your name) and the room's code.
signin-error-user-required = Give your user id or your name.
signin-error-too-many = Too many sign-in requests right now. Try again in a minute.
signin-error-not-allowed = This server does not let you approve agent sign-ins in that room. Ask the server's operator or the room's admin.
signin-error-cross-site = This form was sent from another site. Start the sign-in again from the app you are connecting.
signin-error-request = The app that sent you here made a request this server cannot take. Start again from the app; if it happens again, tell its developer.
signin-error-server = Something went wrong on this server. Try again in a moment; if it keeps happening, tell the server's operator.
signin-error-details = Details for the app's developer
