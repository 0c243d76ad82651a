# Español, neutro (no solo de España): tuteo. «Teléfono», como en la app.

signin-connect-title = Conectar con qp
signin-verified-client = Un cliente verificado en { $host } quiere hacerte preguntas. Se presenta como «{ $name }».
signin-unverified-client = Un cliente no verificado quiere hacerte preguntas. Se presenta como «{ $name }».
signin-self-named = (ese nombre se lo dio él mismo)
signin-account = Este navegador tiene una sesión de qp como { $name }: la pregunta irá al teléfono de esa cuenta.
signin-change-account = ¿No eres { $name }? Preguntar a otra cuenta
signin-ask-named = Preguntar a { $name } en su teléfono
signin-user-label = Tu id de usuario o tu nombre
signin-room-label = La sala en la que puede preguntar (su código)
signin-ask-me = Preguntarme en mi teléfono
signin-phone-hint = Recibirás una pregunta en tu teléfono: toca { $allow } para permitir la conexión o { $deny } para rechazarla.

signin-check-title = Mira tu teléfono
signin-asked = Preguntamos a { $name } en su teléfono si permite esto en { $room }. Esta página continuará en cuanto respondas (dentro de { $minutes } min).
signin-code = La pregunta muestra el código { $code }: toca { $allow } solo si es el de esta página, una página de este servidor que abriste tú desde la app que estás conectando. Que la página de otra persona te muestre un código no es motivo para permitir.
signin-answer-here = Tienes una sesión de qp en este navegador como { $name }: también puedes responder aquí.
signin-buttons-hint = Los botones se activan un momento después de que se muestre esta página.
signin-no-longer-signed-in = Este navegador ya no tiene una sesión de qp: responde en tu teléfono.
signin-answer-failed = Esa respuesta no se envió: responde en tu teléfono o inténtalo de nuevo.

signin-denied = Rechazado en el teléfono. Volviendo a la app.
signin-expired = La pregunta caducó sin respuesta. Empieza de nuevo desde la app.
signin-used = Esta solicitud ya se completó.
signin-allowed = Permitido. Volviendo a la app.

signin-device-title = Aprueba en tu teléfono
signin-device-body = La persona indicada en { $command } recibió en su teléfono una pregunta con el mismo código que muestra el terminal. Toca { $allow } allí para iniciar la sesión del terminal.

signin-error-title = Este inicio de sesión no puede continuar
signin-error-not-found = No hay nadie con ese id o ese nombre en esa sala. Indica tu id de usuario (o tu nombre) y el código de la sala.
signin-error-user-required = Indica tu id de usuario o tu nombre.
signin-error-too-many = Hay demasiadas solicitudes de inicio de sesión ahora mismo. Inténtalo de nuevo en un minuto.
signin-error-not-allowed = Este servidor no te permite aprobar inicios de sesión de agentes en esa sala. Pregunta a quien administra el servidor o la sala.
signin-error-cross-site = Este formulario se envió desde otro sitio. Vuelve a iniciar la sesión desde la app que estás conectando.
signin-error-request = La app que te trajo aquí hizo una solicitud que este servidor no puede aceptar. Empieza de nuevo desde la app; si vuelve a pasar, avisa a quienes la desarrollan.
signin-error-server = Algo falló en este servidor. Inténtalo de nuevo en un momento; si sigue pasando, avisa a quien administra el servidor.
signin-error-details = Detalles para quienes desarrollan la app
