# Italiano, con il tu. «Telefono», come nell’app.

signin-connect-title = Connetti a qp
signin-verified-client = Un client verificato su { $host } vuole farti delle domande. Si presenta come «{ $name }».
signin-unverified-client = Un client non verificato vuole farti delle domande. Si presenta come «{ $name }».
signin-self-named = (questo nome se l’è dato da solo)
signin-account = Questo browser ha effettuato l’accesso a qp come { $name }: la domanda arriva sul telefono di questo account.
signin-change-account = Non sei { $name }? Chiedi a un altro account
signin-ask-named = Chiedi a { $name } sul suo telefono
signin-user-label = Il tuo id utente o il tuo nome
signin-room-label = La stanza in cui può fare domande (il suo codice)
signin-ask-me = Chiedimelo sul telefono
signin-phone-hint = Riceverai una domanda sul telefono: tocca { $allow } per consentire la connessione, { $deny } per rifiutarla.

signin-check-title = Controlla il telefono
signin-asked = Abbiamo chiesto a { $name } sul suo telefono se consentirlo in { $room }. Questa pagina prosegue appena rispondi (entro { $minutes } min).
signin-code = La domanda mostra il codice { $code }: tocca { $allow } solo se è quello di questa pagina, una pagina di questo server che hai aperto tu dall’app che stai connettendo. Se la pagina di qualcun altro ti mostra un codice, non è un motivo per consentire.
signin-answer-here = Su questo browser hai effettuato l’accesso a qp come { $name }: puoi rispondere anche qui.
signin-buttons-hint = I pulsanti si attivano un attimo dopo la comparsa di questa pagina.
signin-no-longer-signed-in = Questo browser non ha più l’accesso a qp: rispondi sul telefono.
signin-answer-failed = La risposta non è stata inviata: rispondi sul telefono o riprova.

signin-denied = Rifiutato sul telefono. Ritorno all’app…
signin-expired = La domanda è scaduta senza risposta. Ricomincia dall’app.
signin-used = Questa richiesta è già stata completata.
signin-allowed = Consentito. Ritorno all’app…

signin-device-title = Approva sul telefono
signin-device-body = La persona indicata in { $command } ha ricevuto sul telefono una domanda con lo stesso codice mostrato dal terminale. Tocca { $allow } lì per far accedere il terminale.

signin-error-title = Questo accesso non può proseguire
signin-error-not-found = In quella stanza non c’è nessuno con quell’id o quel nome. Indica il tuo id utente (o il tuo nome) e il codice della stanza.
signin-error-user-required = Indica il tuo id utente o il tuo nome.
signin-error-too-many = Troppe richieste di accesso in questo momento. Riprova tra un minuto.
signin-error-not-allowed = Questo server non ti consente di approvare gli accessi degli agenti in quella stanza. Chiedi a chi gestisce il server o la stanza.
signin-error-cross-site = Questo modulo è stato inviato da un altro sito. Ricomincia l’accesso dall’app che stai connettendo.
signin-error-request = L’app da cui arrivi ha fatto una richiesta che questo server non può accettare. Ricomincia dall’app; se succede di nuovo, avvisa chi la sviluppa.
signin-error-server = Qualcosa è andato storto su questo server. Riprova tra un momento; se succede ancora, avvisa chi gestisce il server.
signin-error-details = Dettagli per chi sviluppa l’app
