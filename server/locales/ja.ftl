# 日本語。です・ます調。全角の句読点。名前と助詞の間に空白を入れない。

signin-connect-title = qpに接続
signin-verified-client = { $host }で確認されたクライアントが、あなたに質問しようとしています。名乗っている名前は「{ $name }」です。
signin-unverified-client = 確認されていないクライアントが、あなたに質問しようとしています。名乗っている名前は「{ $name }」です。
signin-self-named = （この名前はクライアント自身が付けたものです）
signin-account = このブラウザは{ $name }としてqpにサインインしています。質問はこのアカウントのスマートフォンに届きます。
signin-change-account = { $name }ではありませんか？別のアカウントに尋ねる
signin-ask-named = { $name }のスマートフォンで尋ねる
signin-user-label = あなたのユーザーIDまたは名前
signin-room-label = 質問してよいルーム（ルームのコード）
signin-ask-me = 自分のスマートフォンで尋ねる
signin-phone-hint = スマートフォンに質問が届きます。接続するには「{ $allow }」、断るには「{ $deny }」をタップしてください。

signin-check-title = スマートフォンを確認してください
signin-asked = { $room }でこれを許可するかどうか、{ $name }のスマートフォンで尋ねました。回答するとすぐにこのページが進みます（{ $minutes }分以内）。
signin-code = 質問にはコード{ $code }が表示されます。このページのコードと同じ場合だけ「{ $allow }」をタップしてください。このページは、接続しようとしているアプリから自分で開いた、このサーバーのページのはずです。他人のページにコードが表示されていても、許可する理由にはなりません。
signin-answer-here = このブラウザでは{ $name }としてqpにサインインしています。ここで回答することもできます。
signin-buttons-hint = このページが前面に表示されて少したつと、ボタンが使えるようになります。
signin-no-longer-signed-in = このブラウザはqpからサインアウトされています。スマートフォンで回答してください。
signin-answer-failed = 回答を送信できませんでした。スマートフォンで回答するか、もう一度お試しください。

signin-denied = スマートフォンで拒否されました。アプリに戻ります。
signin-expired = 回答がないまま質問の期限が切れました。アプリからもう一度始めてください。
signin-used = このリクエストはすでに完了しています。
signin-allowed = 許可されました。アプリに戻ります。

signin-device-title = スマートフォンで承認してください
signin-device-body = { $command }で指定された人のスマートフォンに、ターミナルと同じコードの質問が届いています。ターミナルをサインインさせるには、そこで「{ $allow }」をタップしてください。

signin-error-title = このサインインは続行できません
signin-error-not-found = そのIDまたは名前の人は、そのルームにいません。あなたのユーザーID（または名前）とルームのコードを入力してください。
signin-error-user-required = あなたのユーザーIDまたは名前を入力してください。
signin-error-too-many = 現在サインインのリクエストが多すぎます。1分後にもう一度お試しください。
signin-error-not-allowed = このサーバーでは、そのルームでエージェントのサインインを承認することは許可されていません。サーバーの運営者またはルームの管理者にお問い合わせください。
signin-error-cross-site = このフォームは別のサイトから送信されました。接続しようとしているアプリから、もう一度サインインを始めてください。
signin-error-request = ここへ案内したアプリが、このサーバーでは受け付けられないリクエストを送りました。アプリからもう一度始めてください。再び起きる場合は、アプリの開発者に伝えてください。
signin-error-server = このサーバーでエラーが起きました。しばらくしてからもう一度お試しください。繰り返し起きる場合は、サーバーの運営者に伝えてください。
signin-error-details = アプリの開発者向けの詳細
