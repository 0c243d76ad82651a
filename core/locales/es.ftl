# Español
asks-you = { $asker } te pregunta
asks-room = { $asker } pregunta a la sala
answered-by-you = { $answer }, por ti
answered-by = { $answer }, por { $name }
typed-answer = «{ $text }»
expired = sin respuesta, caducada
cancelled = cancelada
anyone-can-answer = cualquiera en la sala puede responder
choose-answer = Elegir respuesta ({ $count })
choose-action = Elegir…
reply-action = Responder
reply-send = Enviar
reply-placeholder = Escribe una respuesta
or-type-reply = o escribe una respuesta
fallback-title = Nueva pregunta
fallback-body = Abre la app para responder.
left-under-a-minute = queda menos de un minuto
left-minutes =
    { $n ->
        [one] queda { $n } min
       *[other] quedan { $n } min
    }
left-hours =
    { $n ->
        [one] queda { $n } h
       *[other] quedan { $n } h
    }
left-days =
    { $n ->
        [one] queda { $n } día
       *[other] quedan { $n } días
    }
no-time-left = caducada
answer-queued = { $answer }: en cola, se envía al conectar
answer-sending = { $answer }: enviando…
answer-retrying = { $answer }: aún sin enviar ({ $error }); se reintentará
answer-rejected = { $answer }: no aceptada ({ $error })
answer-too-late = { $answer }: demasiado tarde, ya resuelta
open-app-to-finish = Abre la app para terminar tu respuesta
channel-name = Preguntas
channel-description = Preguntas que puedes responder desde la notificación
error-text-too-long = Tu respuesta tiene { $length } caracteres; caben { $max } como máximo. Abre la app para acortarla.
error-text-not-allowed = Esta pregunta no admite respuesta escrita.
error-empty-text = Escribe primero una respuesta.
error-unknown-choice = Esa no es una de las respuestas ofrecidas.
error-not-an-answer = Abre la app para responder.
