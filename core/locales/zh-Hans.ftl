# 简体中文。称“你”。全角标点；名字与汉字之间留一个空格（{ $asker } 向你提问）。

# Where: the notification's title (iOS title, Android content title, the push
# alert) and the feed cell's title, for a question asked of you alone.
# Subject: the asker ($asker, a person or an agent: avoid verbs that mark its
# gender). Max 30 characters besides $asker.
asks-you = { $asker } 向你提问

# Where: as asks-you, for a question anyone in the room may answer. Subject:
# the asker ($asker; avoid marking its gender). Max 34 characters besides
# $asker.
asks-room = { $asker } 向大家提问

# Where: the resolution line: the iOS subtitle of the resolved notification,
# the Android notification's text, the feed cell. Subject: you, who answered;
# $answer is the chosen label or the quoted reply. A sentence: capitalised
# where the language capitalises sentences. Max 24 characters besides $answer.
answered-by-you = 你已回答：{ $answer }

# Where: as answered-by-you, when someone else answered. Subject: the person
# who answered ($name; avoid marking their gender); $answer as above. Max 24
# characters besides $name and $answer.
answered-by = { $name } 已回答：{ $answer }

# Where: a typed reply ($text) quoted inside other lines (resolution, my
# answer's status). Subject: none (the reply itself, in the language's
# quotation marks). Max 4 characters besides $text.
typed-answer = “{ $text }”

# Where: the resolution line (iOS subtitle, Android text, feed cell) of a
# question that ran out of time unanswered. Subject: the question. Capitalised
# where the language capitalises sentences. Max 30 characters.
expired = 已过期，无人回答

# Where: the resolution line of a question the asker withdrew. Subject: the
# question. Capitalised where the language capitalises sentences. Max 24
# characters.
cancelled = 已取消

# Where: the feed, under a pending room question. Subject: the people in the
# room. Max 48 characters.
anyone-can-answer = 房间里的任何人都可以回答

# Where: Android's list of choices (the reply field's label) and the feed's
# entry that opens the list, for 3 or 4 options; $count is how many (a
# plural). Subject: you (an instruction). Max 44 characters besides $count.
choose-answer = 选择答案（{ $count } 个选项）

# Where: the Android notification button that opens the list of choices.
# Subject: you (an instruction). Max 12 characters.
choose-action = 选择…

# Where: the notification button that opens the reply field (iOS text action,
# Android reply action). Subject: you (a button: a verb, as the platform's
# buttons read). Max 12 characters.
reply-action = 回复

# Where: the send button of the reply field (iOS keyboard, the feed). Subject:
# you (a button: a verb). Max 10 characters.
reply-send = 发送

# Where: the reply field's placeholder when the asker gave none. Subject: you
# (an instruction). Max 28 characters.
reply-placeholder = 输入回复

# Where: the feed, a hint below the buttons of a question that also takes a
# typed reply. Subject: you (an instruction). Max 32 characters.
or-type-reply = 或输入回复

# Where: the notification's title when the question itself cannot be shown (an
# encrypted push this phone cannot open, an unreadable payload). Subject: the
# question. Max 24 characters.
fallback-title = 新问题

# Where: that notification's text. Subject: you (an instruction). Max 48
# characters.
fallback-body = 打开应用即可回答。

# Where: the time remaining of a pending question (feed cell, the list of
# choices), under a minute. Subject: the time. Max 28 characters.
left-under-a-minute = 剩余不到 1 分钟

# Where: the time remaining, in whole minutes ($n, 1 to 59; a plural).
# Subject: the time. Max 28 characters besides $n.
left-minutes = 剩余 { $n } 分钟

# Where: the time remaining, in whole hours ($n, 1 to 23; a plural). Subject:
# the time. Max 28 characters besides $n.
left-hours = 剩余 { $n } 小时

# Where: the time remaining, in whole days ($n, 1 or more; a plural). Subject:
# the time. Max 28 characters besides $n.
left-days = 剩余 { $n } 天

# Where: the time remaining once the deadline has passed. Subject: the time
# (or the question). Max 28 characters.
no-time-left = 已过期

# Where: the status of my own answer: the feed cell and the notification after
# answering from the lock screen. Saved on the phone, to be sent once online.
# Subject: the answer ($answer, the label or quoted reply; feminine in de, fr,
# es, it, pt, ar, he). Max 50 characters besides $answer.
answer-queued = { $answer }：等待发送，联网后自动发送

# Where: as answer-queued, while it is being sent. Subject: the answer. Max 28
# characters besides $answer.
answer-sending = { $answer }：正在发送…

# Where: as answer-queued, after a failed attempt that will be retried. $cause
# says why, in words for people (never the raw error): offline (no
# connection), unreachable (the server did not answer), signed-out (pair the
# phone again to send), server-error (the server failed). Subject: the answer. Max
# 68 characters besides $answer.
answer-retrying =
    { $cause ->
        [offline] { $answer }：尚未发送（当前离线），稍后重试
        [signed-out] { $answer }：尚未发送，重新配对手机后即可发送
        [server-error] { $answer }：尚未发送（服务器出错），稍后重试
       *[unreachable] { $answer }：尚未发送（无法连接服务器），稍后重试
    }

# Where: as answer-queued, when the server refused the answer for good. $code
# is the server's HTTP status (422…), or none when unknown. Subject: the
# answer. Max 48 characters besides $answer and $code.
answer-rejected =
    { $code ->
        [none] { $answer }：服务器拒绝了此回答
       *[other] { $answer }：服务器拒绝了此回答（错误 { $code }）
    }

# Where: as answer-queued, when the answer was not sent because the question
# was known only from a plain push and the server's question with that id says
# something else (someone may have forged the push). The feed now shows the
# real question. Subject: the answer. Max 80 characters besides $answer.
answer-question-changed = { $answer }：未发送，实际问题与所显示的不同，请重新查看

# Where: as answer-queued, when the question closed before my answer arrived.
# $state says how: answered (by someone else), expired, cancelled, or closed
# (not known yet). Never say 'already answered' for an expired or cancelled
# question. Subject: the answer / the question. Max 56 characters besides
# $answer.
answer-too-late =
    { $state ->
        [answered] { $answer }：太晚了，已有其他人回答
        [expired] { $answer }：太晚了，问题已过期
        [cancelled] { $answer }：太晚了，问题已取消
       *[other] { $answer }：太晚了，问题已关闭
    }

# Where: the Android notification's text when a lock-screen reply needs the
# app (too long to send as is). Subject: you (an instruction). Max 48
# characters.
open-app-to-finish = 打开应用完成你的回答

# Where: the app's status line (above the feed, the account screen) when the
# server no longer takes this phone's sign-in (the token was revoked or has
# expired); answers wait on the phone until the person pairs again. Subject:
# you (an instruction). Two sentences. Max 100 characters.
sign-in-again = 登录已失效。请重新配对这部手机以发送你的回答。

# Where: Android's notification settings: the name of this app's channel.
# Subject: the questions (a plural noun). Max 24 characters.
channel-name = 待答问题

# Where: Android's notification settings: the channel's description. Subject:
# the questions. Max 70 characters.
channel-description = 可以直接在通知中回答的问题

# Where: the notification's text when a typed reply is longer than the
# question allows; $length and $max count characters (both 2 or more).
# Subject: your reply. Max 100 characters besides $length and $max.
error-text-too-long = 你的回复有 { $length } 个字符，最多 { $max } 个。请打开应用缩短回复。

# Where: the notification's text when a typed reply reached a question that
# takes none. Subject: the question. Max 60 characters.
error-text-not-allowed = 此问题不接受文字回复。

# Where: the notification's text when the reply field was sent empty. Subject:
# you (an instruction). Max 48 characters.
error-empty-text = 请先输入回复。

# Where: the notification's text when the chosen answer is not one of the
# question's options. Subject: that answer. Max 60 characters.
error-unknown-choice = 该答案不在选项中。

# Where: the notification's text when an action was not an answer. Subject:
# you (an instruction). Max 48 characters.
error-not-an-answer = 打开应用即可回答。

# Where: the sign-in consent question (the server asks it when an agent signs
# in through OAuth or qp login --url): the asker's name in its title, inside
# asks-you, on the lock screen, the feed and the web. Subject: none (the name
# of the server's sign-in). Max 26 characters.
consent-asker = qp 登录

# Where: the sign-in consent question's text (lock screen, feed, web). $client:
# verified (a client whose address $host was checked), unverified (a client
# that registered itself) or terminal (qp login in a terminal); $room: the
# room's name; $name: what the client calls itself, its claim, always quoted
# after the server's own words. Subject: the client (it), then you (Allow?).
# Max 190 characters besides $host, $room and $name.
consent-prompt =
    { $client ->
        [verified] 一个经 { $host } 验证的客户端想在 { $room } 中向你提问。是否允许？它自称“{ $name }”。
        [terminal] 一个终端（qp login）想在 { $room } 中向你提问。是否允许？它自称“{ $name }”，未经验证。
       *[unverified] 一个未经验证的客户端想在 { $room } 中向你提问。是否允许？它自称“{ $name }”。
    }

# Where: a sentence after consent-prompt: where the sign-in goes back to.
# $to: local (the computer the client runs on) or host ($host). Subject: the
# client (it). Max 72 characters besides $host.
consent-returns =
    { $to ->
        [local] 它将在其运行所在的电脑上登录（localhost）。
       *[host] 它将在 { $host } 登录。
    }

# Where: consent-prompt followed by consent-returns ($prompt, $returns): how
# two sentences follow each other. Subject: none. Max 2 characters besides
# $prompt and $returns.
consent-prompt-and-return = { $prompt }{ $returns }

# Where: the consent question's context line (the lock screen's subtitle):
# the code to compare ($code) with the one shown where the sign-in started,
# then who asks. $client as in consent-prompt. Subject: none (a label). Max
# 34 characters besides $code and $host.
consent-context =
    { $client ->
        [verified] 核对码 { $code } · { $host }
        [terminal] 核对码 { $code }
       *[unverified] 核对码 { $code } · 未经验证的客户端
    }

# Where: the consent question's button that lets the client ask, and the
# answer's line (answered-by-you). Subject: you (a button). Max 12 characters.
consent-allow = 允许

# Where: the consent question's button that refuses it, and the answer's
# line. Subject: you (a button). Max 12 characters.
consent-deny = 拒绝

# Where: the pairing screen (phone and web responder) when pairing failed.
# $reason: not-a-code (what was scanned or typed is neither), no-server (a
# bare code without its server), invalid-code (unknown, used or expired),
# too-many-attempts (too many wrong codes from here: wait), unreachable (the
# server did not answer), refused (the server refused for another reason),
# storage-failed (the device could not keep its pairing). Subject: varies;
# then you (an instruction). Two sentences at most. Max 100 characters.
pair-failed =
    { $reason ->
        [not-a-code] 这不是配对链接或配对码。
        [no-server] 仅凭此代码无法确定服务器，请打开配对链接。
        [invalid-code] 此配对码不存在、已被使用或已过期。请索取新的邀请。
        [too-many-attempts] 此网络输错代码次数过多。请等待几分钟后重试。
        [unreachable] 无法连接服务器。请检查网络连接后重试。
       *[refused] 服务器拒绝了配对。请稍后重试。
        [storage-failed] 此设备无法保存配对信息。请重试。
    }
