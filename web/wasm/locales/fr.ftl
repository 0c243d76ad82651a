# Français. Vouvoiement. Espace insécable (U+00A0) avant « : » et à
# l’intérieur des guillemets, espace fine insécable (U+202F) avant ; ? !
# (invisibles ici, vérifiés par un test) : la ponctuation ne passe jamais
# seule à la ligne. « Réponse » est féminin : les lignes d’état s’accordent
# avec elle, les lignes de résolution avec « la question ».
web-pair-heading = Associer ce navigateur
web-pair-help = Ouvrez sur cet appareil le lien d’association reçu, ou saisissez son code.
web-pair-code = Code d’association
web-pair-button = Associer
web-pairing = Association…
web-signed-in = Compte connecté :
web-sign-out = Se déconnecter
web-empty = Aucune question pour le moment.
web-offline = Hors ligne : vos réponses partiront dès le retour de la connexion.
web-notifications = Activer les notifications
web-notifications-on = Les notifications sont activées
web-notifications-refused = Les notifications ne sont pas activées : le serveur n’a pas accepté ce navigateur (erreur { $code }). Réessayez plus tard.
web-close = Fermer
web-announce = { $what } : { $title }. { $prompt }
web-load-failed = Serveur injoignable ; nouvel essai en cours.
web-answer-signed-out = { $answer } : pas encore envoyée ; réassociez ce navigateur pour l’envoyer
web-link-checking = Vérification du lien d’association…
web-link-heading = Se connecter en tant que { $name } ?
web-link-detail = Ce lien d’association connecte ce navigateur à { $server } en tant que { $name }. Ne continuez que si { $name }, c’est vous.
web-link-replace = Ce navigateur est connecté en tant que { $current }. Continuer déconnecte { $current } de ce navigateur et désactive les notifications ici.
web-link-again = Ce navigateur est déjà connecté en tant que { $current }. Continuer remplace cette connexion.
web-link-accept = Se connecter en tant que { $name }
web-link-cancel = Annuler
web-link-stay = Garder la connexion de { $current }
web-notifications-switched = Les notifications ont été désactivées lors du changement de compte de ce navigateur. Réactivez-les pour { $name } si vous le souhaitez.
web-text-too-long = Votre réponse fait { $length } caractères, la limite est de { $max }. Raccourcissez-la, puis renvoyez-la.
web-reply-left = Caractères restants : { $count }
web-reply-over = Caractères en trop : { $count }
web-notifications-blocked = Les notifications sont bloquées pour ce site. Autorisez-les dans les paramètres du site de votre navigateur, puis réessayez.
web-notifications-unreachable = Les notifications ne sont pas activées : le service push du navigateur est injoignable. Vérifiez la connexion, puis réessayez.
web-notifications-off-server = Ce serveur n’envoie pas de notifications. Les questions apparaissent ici tant que cette page est ouverte.
