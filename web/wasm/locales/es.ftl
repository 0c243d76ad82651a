# Español, neutro (no solo de España): tuteo. «Respuesta» es femenino:
# las líneas de estado concuerdan con ella; las de resolución, con «la
# pregunta».
web-pair-heading = Vincular este navegador
web-pair-help = Abre en este dispositivo el enlace de vinculación que recibiste o escribe su código.
web-pair-code = Código de vinculación
web-pair-button = Vincular
web-pairing = Vinculando…
web-signed-in = Sesión iniciada como
web-sign-out = Cerrar sesión
web-empty = No hay preguntas ahora.
web-offline = Sin conexión: tus respuestas se enviarán cuando vuelvas a estar en línea.
web-notifications = Activar notificaciones
web-notifications-on = Las notificaciones están activadas
web-notifications-refused = Las notificaciones no están activadas: el servidor no aceptó este navegador (error { $code }). Vuelve a intentarlo más tarde.
web-close = Cerrar
web-announce = { $what }: { $title }. { $prompt }
web-load-failed = No se puede conectar con el servidor; reintentando.
web-answer-signed-out = { $answer }: aún sin enviar; vuelve a vincular este navegador para enviarla
web-link-checking = Comprobando el enlace de vinculación…
web-link-heading = ¿Iniciar sesión como { $name }?
web-link-detail = Este enlace de vinculación inicia sesión en { $server } en este navegador como { $name }. Continúa solo si { $name } eres tú.
web-link-replace = Este navegador tiene la sesión iniciada como { $current }. Si continúas, se cerrará la sesión de { $current } en este navegador y se desactivarán las notificaciones aquí.
web-link-again = Este navegador ya tiene la sesión iniciada como { $current }. Si continúas, se sustituirá esa sesión.
web-link-accept = Iniciar sesión como { $name }
web-link-cancel = Cancelar
web-link-stay = Seguir con la sesión de { $current }
web-notifications-switched = Las notificaciones se desactivaron al cambiar de cuenta en este navegador. Vuelve a activarlas para { $name } si las quieres.
web-text-too-long = Tu respuesta tiene { $length } caracteres y el máximo es { $max }. Acórtala y vuelve a enviarla.
web-reply-left = Caracteres restantes: { $count }
web-reply-over = Caracteres de más: { $count }
web-notifications-blocked = Las notificaciones están bloqueadas para este sitio. Permítelas en la configuración del sitio de tu navegador y vuelve a intentarlo.
web-notifications-unreachable = Las notificaciones no están activadas: no se pudo conectar con el servicio push del navegador. Comprueba la conexión y vuelve a intentarlo.
web-notifications-off-server = Este servidor no envía notificaciones. Las preguntas aparecen aquí mientras esta página esté abierta.
