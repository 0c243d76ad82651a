# Português (Brasil)
asks-you = { $asker } pergunta para você
asks-room = { $asker } pergunta para a sala
answered-by-you = { $answer }, por você
answered-by = { $answer }, por { $name }
typed-answer = “{ $text }”
expired = sem resposta, expirada
cancelled = cancelada
anyone-can-answer = qualquer pessoa da sala pode responder
choose-answer = Escolher resposta ({ $count })
choose-action = Escolher…
reply-action = Responder
reply-send = Enviar
reply-placeholder = Digite uma resposta
or-type-reply = ou digite uma resposta
fallback-title = Nova pergunta
fallback-body = Abra o app para responder.
left-under-a-minute = menos de um minuto restante
left-minutes =
    { $n ->
        [one] { $n } min restante
       *[other] { $n } min restantes
    }
left-hours =
    { $n ->
        [one] { $n } h restante
       *[other] { $n } h restantes
    }
left-days =
    { $n ->
        [one] { $n } dia restante
       *[other] { $n } dias restantes
    }
no-time-left = expirada
answer-queued = { $answer }: na fila, envia quando houver conexão
answer-sending = { $answer }: enviando…
answer-retrying = { $answer }: ainda não enviada ({ $error }); nova tentativa em breve
answer-rejected = { $answer }: não aceita ({ $error })
answer-too-late = { $answer }: tarde demais, já resolvida
open-app-to-finish = Abra o app para concluir sua resposta
channel-name = Perguntas
channel-description = Perguntas que você responde pela notificação
error-text-too-long = Sua resposta tem { $length } caracteres; cabem no máximo { $max }. Abra o app para encurtá-la.
error-text-not-allowed = Esta pergunta não aceita resposta digitada.
error-empty-text = Digite uma resposta primeiro.
error-unknown-choice = Essa não é uma das respostas oferecidas.
error-not-an-answer = Abra o app para responder.
