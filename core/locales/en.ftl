# English: the reference text and the fallback of every other language.
# Placeables: $asker, $name (people and agents), $answer, $text (the asker's
# labels and the typed reply), $error, $count, $n, $length, $max.
# Keep each string short enough for a lock-screen action or a button.

asks-you = { $asker } asks you
asks-room = { $asker } asks the room
answered-by-you = { $answer }, by you
answered-by = { $answer }, by { $name }
typed-answer = “{ $text }”
expired = no answer, expired
cancelled = cancelled
anyone-can-answer = anyone in the room can answer
choose-answer = Choose an answer ({ $count })
choose-action = Choose…
reply-action = Reply
reply-send = Send
reply-placeholder = Type a reply
or-type-reply = or type a reply
fallback-title = New question
fallback-body = Open the app to answer.
left-under-a-minute = less than a minute left
left-minutes = { $n } min left
left-hours = { $n } h left
left-days =
    { $n ->
        [one] 1 day left
       *[other] { $n } days left
    }
no-time-left = expired
answer-queued = { $answer }: queued, sends when online
answer-sending = { $answer }: sending…
answer-retrying = { $answer }: not sent yet ({ $error }); will retry
answer-rejected = { $answer }: not accepted ({ $error })
answer-too-late = { $answer }: too late, already resolved
open-app-to-finish = Open the app to finish your answer
channel-name = Questions
channel-description = Questions you can answer from the notification
error-text-too-long = Your reply has { $length } characters; at most { $max } fit. Open the app to shorten it.
error-text-not-allowed = This question takes no typed reply.
error-empty-text = Type a reply first.
error-unknown-choice = That is not one of the offered answers.
error-not-an-answer = Open the app to answer.
