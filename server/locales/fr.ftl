# Français. Vouvoiement. Espace insécable (U+00A0) avant « : » et à
# l’intérieur des guillemets, espace fine insécable (U+202F) avant ; ? !
# (invisibles ici, vérifiés par un test). « Téléphone », comme dans l’app.

signin-connect-title = Se connecter à qp
signin-verified-client = Un client vérifié sur { $host } souhaite vous poser des questions. Il se présente comme « { $name } ».
signin-unverified-client = Un client non vérifié souhaite vous poser des questions. Il se présente comme « { $name } ».
signin-self-named = (c’est lui qui s’est donné ce nom)
signin-account = Ce navigateur est connecté à qp en tant que { $name } : la question ira sur le téléphone de ce compte.
signin-change-account = Vous n’êtes pas { $name } ? Demander à un autre compte
signin-ask-named = Demander à { $name } sur son téléphone
signin-user-label = Votre identifiant ou votre nom
signin-room-label = Le salon où il pourra poser des questions (son code)
signin-ask-me = Me demander sur mon téléphone
signin-phone-hint = Vous recevrez une question sur votre téléphone : touchez { $allow } pour autoriser la connexion, { $deny } pour la refuser.

signin-check-title = Regardez votre téléphone
signin-asked = Nous avons demandé à { $name } sur son téléphone s’il faut autoriser ceci dans { $room }. Cette page passera à la suite dès votre réponse (sous { $minutes } min).
signin-code = La question affiche le code { $code } : touchez { $allow } seulement si c’est celui de cette page, une page de ce serveur que vous avez ouverte vous-même depuis l’app que vous connectez. La page de quelqu’un d’autre qui vous montre un code n’est pas une raison d’autoriser.
signin-answer-here = Ce navigateur est connecté à qp en tant que { $name } : vous pouvez aussi répondre ici.
signin-buttons-hint = Les boutons s’activent un instant après l’affichage de cette page.
signin-no-longer-signed-in = Ce navigateur n’est plus connecté à qp : répondez sur votre téléphone.
signin-answer-failed = Cette réponse n’est pas partie : répondez sur votre téléphone, ou réessayez.

signin-denied = Refusé sur le téléphone. Retour à l’app.
signin-expired = La question a expiré sans réponse. Recommencez depuis l’app.
signin-used = Cette demande est déjà terminée.
signin-allowed = Autorisé. Retour à l’app.

signin-device-title = Approuvez sur votre téléphone
signin-device-body = La personne indiquée dans { $command } a reçu sur son téléphone une question avec le même code que celui du terminal. Touchez { $allow } sur le téléphone pour connecter le terminal.

signin-error-title = Cette connexion ne peut pas continuer
signin-error-not-found = Personne dans ce salon n’a cet identifiant ou ce nom. Indiquez votre identifiant (ou votre nom) et le code du salon.
signin-error-user-required = Indiquez votre identifiant ou votre nom.
signin-error-too-many = Trop de demandes de connexion pour l’instant. Réessayez dans une minute.
signin-error-not-allowed = Ce serveur ne vous permet pas d’approuver la connexion d’agents dans ce salon. Adressez-vous à l’administration du serveur ou du salon.
signin-error-cross-site = Ce formulaire a été envoyé depuis un autre site. Recommencez la connexion depuis l’app que vous connectez.
signin-error-request = L’app qui vous a envoyé ici a fait une demande que ce serveur ne peut pas accepter. Recommencez depuis l’app ; si cela se reproduit, prévenez ses développeurs.
signin-error-server = Une erreur s’est produite sur ce serveur. Réessayez dans un instant ; si cela se reproduit, prévenez l’administration du serveur.
signin-error-details = Détails pour les développeurs de l’app
