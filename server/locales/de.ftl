# Deutsch. Du-Form, wie im Rest von qp. „Telefon“ wie in den Texten der App.

signin-connect-title = Mit qp verbinden
signin-verified-client = Ein unter { $host } verifizierter Client möchte dir Fragen stellen. Er nennt sich „{ $name }“.
signin-unverified-client = Ein nicht verifizierter Client möchte dir Fragen stellen. Er nennt sich „{ $name }“.
signin-self-named = (diesen Namen hat er sich selbst gegeben)
signin-account = Dieser Browser ist bei qp als { $name } angemeldet: Die Frage geht an das Telefon dieses Kontos.
signin-change-account = Nicht { $name }? Ein anderes Konto fragen
signin-ask-named = { $name } auf dem Telefon fragen
signin-user-label = Deine Benutzer-ID oder dein Name
signin-room-label = Der Raum, in dem er fragen darf (sein Code)
signin-ask-me = Auf meinem Telefon fragen
signin-phone-hint = Du bekommst eine Frage auf dein Telefon: Tippe auf { $allow }, um die Verbindung zu erlauben, oder auf { $deny }, um sie abzulehnen.

signin-check-title = Schau auf dein Telefon
signin-asked = Wir haben { $name } auf dem Telefon gefragt, ob das in { $room } erlaubt werden soll. Diese Seite fährt fort, sobald du antwortest (innerhalb von { $minutes } Min.).
signin-code = Die Frage zeigt den Code { $code }: Tippe nur dann auf { $allow }, wenn es der Code auf dieser Seite ist, einer Seite dieses Servers, die du selbst aus der App geöffnet hast, die du verbindest. Zeigt dir jemand anderes eine Seite mit einem Code, ist das kein Grund zu erlauben.
signin-answer-here = Du bist in diesem Browser bei qp als { $name } angemeldet: Du kannst auch hier antworten.
signin-buttons-hint = Die Schaltflächen werden einen Moment nach dem Anzeigen dieser Seite aktiv.
signin-no-longer-signed-in = Dieser Browser ist nicht mehr bei qp angemeldet: Antworte auf deinem Telefon.
signin-answer-failed = Diese Antwort ist nicht angekommen: Antworte auf deinem Telefon oder versuche es noch einmal.

signin-denied = Auf dem Telefon abgelehnt. Zurück zur App.
signin-expired = Die Frage ist abgelaufen, bevor sie beantwortet wurde. Fang in der App noch einmal an.
signin-used = Diese Anfrage ist schon abgeschlossen.
signin-allowed = Erlaubt. Zurück zur App.

signin-device-title = Auf dem Telefon bestätigen
signin-device-body = Die in { $command } angegebene Person hat auf ihrem Telefon eine Frage mit demselben Code bekommen, den das Terminal zeigt. Tippe dort auf { $allow }, um das Terminal anzumelden.

signin-error-title = Diese Anmeldung kann nicht weitergehen
signin-error-not-found = In diesem Raum ist niemand mit dieser ID oder diesem Namen. Gib deine Benutzer-ID (oder deinen Namen) und den Code des Raums an.
signin-error-user-required = Gib deine Benutzer-ID oder deinen Namen an.
signin-error-too-many = Gerade gibt es zu viele Anmeldeanfragen. Versuche es in einer Minute noch einmal.
signin-error-not-allowed = Auf diesem Server darfst du Anmeldungen von Agenten in diesem Raum nicht bestätigen. Frag die Betreiber des Servers oder die Admins des Raums.
signin-error-cross-site = Dieses Formular wurde von einer anderen Website gesendet. Starte die Anmeldung noch einmal in der App, die du verbindest.
signin-error-request = Die App, die dich hierher geschickt hat, hat eine Anfrage gestellt, die dieser Server nicht annehmen kann. Fang in der App noch einmal an; passiert es wieder, sag es den Entwicklern der App.
signin-error-server = Auf diesem Server ist ein Fehler aufgetreten. Versuche es gleich noch einmal; passiert es wieder, sag es den Betreibern des Servers.
signin-error-details = Details für die Entwickler der App
