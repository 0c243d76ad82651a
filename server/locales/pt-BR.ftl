# Português do Brasil, com "você". "Celular", como no app.

signin-connect-title = Conectar ao qp
signin-verified-client = Um cliente verificado em { $host } quer fazer perguntas a você. Ele se apresenta como “{ $name }”.
signin-unverified-client = Um cliente não verificado quer fazer perguntas a você. Ele se apresenta como “{ $name }”.
signin-self-named = (esse nome ele mesmo se deu)
signin-account = Este navegador está conectado ao qp como { $name }: a pergunta vai para o celular dessa conta.
signin-change-account = Não é { $name }? Perguntar a outra conta
signin-ask-named = Perguntar a { $name } no celular
signin-user-label = Seu id de usuário ou seu nome
signin-room-label = A sala em que ele pode perguntar (o código dela)
signin-ask-me = Perguntar no meu celular
signin-phone-hint = Você vai receber uma pergunta no celular: toque em { $allow } para permitir a conexão ou em { $deny } para recusá-la.

signin-check-title = Confira seu celular
signin-asked = Perguntamos a { $name } no celular se isso pode ser permitido em { $room }. Esta página continua assim que você responder (em até { $minutes } min).
signin-code = A pergunta mostra o código { $code }: toque em { $allow } só se for o desta página, uma página deste servidor que você abriu pelo app que está conectando. A página de outra pessoa mostrando um código não é motivo para permitir.
signin-answer-here = Este navegador está conectado ao qp como { $name }: você pode responder aqui mesmo.
signin-buttons-hint = Os botões são ativados um instante depois que esta página aparece.
signin-no-longer-signed-in = Este navegador não está mais conectado ao qp: responda no celular.
signin-answer-failed = A resposta não foi enviada: responda no celular ou tente de novo.

signin-denied = Recusado no celular. Voltando ao app.
signin-expired = A pergunta expirou sem resposta. Comece de novo pelo app.
signin-used = Esta solicitação já foi concluída.
signin-allowed = Permitido. Voltando ao app.

signin-device-title = Aprove no celular
signin-device-body = A pessoa indicada em { $command } recebeu no celular uma pergunta com o mesmo código que o terminal mostra. Toque em { $allow } lá para conectar o terminal.

signin-error-title = Este login não pode continuar
signin-error-not-found = Ninguém com esse id ou nome está nessa sala. Informe seu id de usuário (ou seu nome) e o código da sala.
signin-error-user-required = Informe seu id de usuário ou seu nome.
signin-error-too-many = Há solicitações de login demais agora. Tente de novo em um minuto.
signin-error-not-allowed = Este servidor não permite que você aprove logins de agentes nessa sala. Fale com quem administra o servidor ou a sala.
signin-error-cross-site = Este formulário foi enviado por outro site. Comece o login de novo pelo app que você está conectando.
signin-error-request = O app que trouxe você até aqui fez uma solicitação que este servidor não pode aceitar. Comece de novo pelo app; se acontecer de novo, avise quem o desenvolve.
signin-error-server = Algo deu errado neste servidor. Tente de novo em instantes; se continuar acontecendo, avise quem administra o servidor.
signin-error-details = Detalhes para quem desenvolve o app
