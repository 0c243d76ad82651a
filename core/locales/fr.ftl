# Français
asks-you = { $asker } vous demande
asks-room = { $asker } demande au salon
answered-by-you = { $answer }, par vous
answered-by = { $answer }, par { $name }
typed-answer = « { $text } »
expired = sans réponse, expirée
cancelled = annulée
anyone-can-answer = tout le monde dans le salon peut répondre
choose-answer = Choisir une réponse ({ $count })
choose-action = Choisir…
reply-action = Répondre
reply-send = Envoyer
reply-placeholder = Saisir une réponse
or-type-reply = ou saisir une réponse
fallback-title = Nouvelle question
fallback-body = Ouvrez l’app pour répondre.
left-under-a-minute = moins d’une minute restante
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
        [one] { $n } jour restant
       *[other] { $n } jours restants
    }
no-time-left = expirée
answer-queued = { $answer } : en attente, envoi dès la connexion
answer-sending = { $answer } : envoi…
answer-retrying = { $answer } : pas encore envoyée ({ $error }) ; nouvel essai prévu
answer-rejected = { $answer } : refusée ({ $error })
answer-too-late = { $answer } : trop tard, déjà résolue
open-app-to-finish = Ouvrez l’app pour terminer votre réponse
channel-name = Questions
channel-description = Questions auxquelles répondre depuis la notification
error-text-too-long = Votre réponse fait { $length } caractères ; { $max } au plus. Ouvrez l’app pour la raccourcir.
error-text-not-allowed = Cette question n’accepte pas de réponse saisie.
error-empty-text = Saisissez d’abord une réponse.
error-unknown-choice = Ce n’est pas une des réponses proposées.
error-not-an-answer = Ouvrez l’app pour répondre.
