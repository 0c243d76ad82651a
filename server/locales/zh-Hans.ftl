# 简体中文。称“你”。全角标点；名字与汉字之间留一个空格。

signin-connect-title = 连接到 qp
signin-verified-client = 一个经 { $host } 验证的客户端想向你提问。它自称“{ $name }”。
signin-unverified-client = 一个未经验证的客户端想向你提问。它自称“{ $name }”。
signin-self-named = （这个名字是它自己起的）
signin-account = 此浏览器已以 { $name } 的身份登录 qp：问题会发到这个账户的手机上。
signin-change-account = 不是 { $name }？改问其他账户
signin-ask-named = 在 { $name } 的手机上询问
signin-user-label = 你的用户 ID 或名字
signin-room-label = 它可以提问的房间（房间的代码）
signin-ask-me = 在我的手机上询问
signin-phone-hint = 你的手机会收到一个问题：点按“{ $allow }”即可连接，点按“{ $deny }”即可拒绝。

signin-check-title = 请查看你的手机
signin-asked = 我们已在 { $name } 的手机上询问是否允许在 { $room } 中进行此操作。你一回答，此页面就会继续（{ $minutes } 分钟内）。
signin-code = 问题中会显示核对码 { $code }：只有当它与此页面上的代码相同时才点按“{ $allow }”。此页面应是你自己从要连接的应用中打开的本服务器页面。别人的页面给你看一个代码，并不是允许的理由。
signin-answer-here = 你已在此浏览器上以 { $name } 的身份登录 qp：也可以在这里回答。
signin-buttons-hint = 此页面显示在前台片刻之后，按钮才可使用。
signin-no-longer-signed-in = 此浏览器已不再登录 qp：请在手机上回答。
signin-answer-failed = 回答未能发送：请在手机上回答，或再试一次。

signin-denied = 已在手机上拒绝。正在返回应用。
signin-expired = 问题在回答之前已过期。请从应用重新开始。
signin-used = 此请求已经完成。
signin-allowed = 已允许。正在返回应用。

signin-device-title = 请在手机上批准
signin-device-body = { $command } 中指定的人已在手机上收到一个问题，其代码与终端显示的相同。在那里点按“{ $allow }”即可让终端登录。

signin-error-title = 此次登录无法继续
signin-error-not-found = 该房间中没有这个 ID 或名字的人。请输入你的用户 ID（或名字）和房间的代码。
signin-error-user-required = 请输入你的用户 ID 或名字。
signin-error-too-many = 当前登录请求过多。请一分钟后再试。
signin-error-not-allowed = 此服务器不允许你在该房间中批准智能体登录。请联系服务器的管理员或房间的管理员。
signin-error-cross-site = 此表单是从其他网站提交的。请从你要连接的应用重新开始登录。
signin-error-request = 引导你来到这里的应用发出了本服务器无法接受的请求。请从应用重新开始；如果再次发生，请告知其开发者。
signin-error-server = 本服务器出错了。请稍后再试；如果反复出现，请告知服务器的管理员。
signin-error-details = 给应用开发者的详细信息
