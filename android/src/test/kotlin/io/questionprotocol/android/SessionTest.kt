// The session an Android app holds, against the real `qp serve` that
// android/run-tests starts, at every Robolectric SDK level: a phone object
// before pairing, signing in, a new FCM token registered once, a revoked
// sign-in (401) keeping the answer and saying so in the person's language,
// the answer delivered once after pairing again, and signing out (store
// empty, the device gone on the server, the token forgotten).
package io.questionprotocol.android

import io.questionprotocol.core.*
import kotlinx.coroutines.launch
import kotlinx.coroutines.runBlocking
import org.json.JSONObject
import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertNull
import org.junit.Assert.assertTrue
import org.junit.Assume.assumeTrue
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.RobolectricTestRunner
import java.io.File
import java.net.HttpURLConnection
import java.net.URL
import java.nio.file.Files
import java.util.concurrent.ConcurrentHashMap

@RunWith(RobolectricTestRunner::class)
class SessionTest {
    // The phone's requests go through HttpURLConnection, as in an app.
    init { HttpUrlConnectionTransport.install() }

    private fun env(k: String): String = System.getenv(k)!!

    /** The app's Keystore-backed storage of tokens, in memory. */
    class Vault : TokenVault {
        val tokens = ConcurrentHashMap<String, String>()
        val forgotten = mutableListOf<String>()
        override fun saveToken(userId: String, token: String) { tokens[userId] = token }
        override fun token(userId: String): String? = tokens[userId]
        override fun forgetToken(userId: String) { tokens.remove(userId); forgotten.add(userId) }
    }

    /** One HTTP exchange with the e2e server: status and JSON body. */
    private fun http(method: String, path: String, token: String, body: String? = null): Pair<Int, JSONObject> {
        val c = URL(env("QP_E2E_URL") + path).openConnection() as HttpURLConnection
        c.requestMethod = method
        c.setRequestProperty("Authorization", "Bearer $token")
        if (body != null) {
            c.doOutput = true
            c.setRequestProperty("Content-Type", "application/json")
            c.outputStream.use { it.write(body.toByteArray()) }
        }
        val status = c.responseCode
        val text = (if (status < 400) c.inputStream else c.errorStream)?.bufferedReader()?.readText().orEmpty()
        return status to (if (text.startsWith("{")) JSONObject(text) else JSONObject())
    }

    /** A fresh one-time pairing link, as the operator makes one. */
    private fun pairLink(): String {
        val (status, inv) = http("POST", "/api/admin/users/${env("QP_E2E_USER")}/invites", env("QP_E2E_ADMIN_TOKEN"), "{}")
        assertEquals(201, status)
        return inv.getString("link")
    }

    @Test
    fun aSessionFromBeforePairingToSignOut() = runBlocking {
        assumeTrue("run through android/run-tests", System.getenv("QP_E2E_ADMIN_TOKEN") != null)
        val sdk = android.os.Build.VERSION.SDK_INT
        val store = File(Files.createTempDirectory("qp-session").toFile(), "phone.sqlite").path
        val vault = Vault()

        // At launch, before pairing: an object to hold, signed out.
        val phone = PhoneCore.openSession(store, StoreMode.APP, vault, listOf("fr-FR"))
        assertEquals(SessionState.SIGNED_OUT, phone.sessionStatus().state)
        assertTrue(phone.feed().isEmpty())
        try { phone.sync(); error("expected NotSignedIn") } catch (e: QpException.NotSignedIn) {}

        // Sign in, registering for pushes in the same call.
        val device = DeviceRegistration(Platform.ANDROID, "fcm-session-$sdk-a", "io.questionprotocol.test")
        val account = phone.signIn(pairLink(), "Pixel (session test)", null, device)
        assertEquals(env("QP_E2E_USER"), account.userId)
        val token = vault.tokens[account.userId]!!
        assertTrue(token.startsWith("qpu_"))
        assertEquals(SessionState.SIGNED_IN, phone.sessionStatus().state)

        // FCM's onNewToken: the same token sends nothing, a new one once.
        assertFalse(phone.updatePushToken("fcm-session-$sdk-a"))
        assertTrue(phone.updatePushToken("fcm-session-$sdk-b"))
        assertFalse(phone.updatePushToken("fcm-session-$sdk-b"))
        val deviceId = phone.sessionStatus().deviceId!!

        // A question, answered once the server no longer takes the token.
        val (asked, q) = http("POST", "/api/agent/rooms/OPS123/questions", env("QP_E2E_AGENT_TOKEN"),
            """{"prompt":"Restart the workers (SDK $sdk)?","target_user_id":"${env("QP_E2E_USER")}",
               "options":[{"value":"yes","label":"Yes","style":"primary"},{"value":"no","label":"No"}]}""")
        assertEquals(201, asked)
        val qid = q.getString("id")
        phone.sync()
        // A real revoke on the server (as `qp admin token revoke` does; here
        // the sign-in's own DELETE /api/me/token): the device goes with it.
        val revoked = http("DELETE", "/api/me/token", token).first
        assertTrue("revoke: $revoked", revoked == 200 || revoked == 204)
        assertEquals(AnswerState.QUEUED, phone.answerInApp(qid, "yes", null).state)
        val refused = phone.flush()
        assertTrue("$refused", refused.unauthorized)
        val status = phone.sessionStatus()
        assertEquals(SessionState.UNAUTHORIZED, status.state)
        assertEquals("Votre connexion a expiré. Associez à nouveau ce téléphone pour envoyer vos réponses.", status.line)
        val waiting = phone.answerStatus(qid)!!
        assertEquals(AnswerState.QUEUED, waiting.state)
        assertTrue(waiting.status, waiting.status.contains("réassociez le téléphone"))
        try { phone.sync(); error("expected Unauthorized") } catch (e: QpException.Unauthorized) {}

        // Pairing again sends it, once, and registers for pushes again with
        // the FCM token kept (the revoke took the device; FCM hands the same
        // token over no more): a new device id, live on the server.
        phone.signIn(pairLink(), "Pixel (session test)", null, null)
        assertEquals(SessionState.SIGNED_IN, phone.sessionStatus().state)
        val again = phone.sessionStatus().deviceId
        assertTrue("registered again: $again", again != null && again != deviceId)
        val token2 = vault.tokens[account.userId]!!
        assertEquals("the new registration exists on the server", 204, http("DELETE", "/api/devices/$again", token2).first)
        assertEquals(AnswerState.ANSWERED, phone.answerStatus(qid)!!.state)
        assertEquals(0u, phone.flush().answered)
        val (_, seen) = http("GET", "/api/agent/questions/$qid", env("QP_E2E_AGENT_TOKEN"))
        assertEquals("yes", seen.getJSONObject("answer").getString("value"))

        // Sign out: the device is gone on the server, the store empty, the
        // token forgotten, the object still usable (signed out).
        assertTrue(phone.signOut().deviceRemoved)
        assertEquals(SessionState.SIGNED_OUT, phone.sessionStatus().state)
        assertTrue(phone.feed().isEmpty())
        assertNull(vault.tokens[account.userId])
        assertEquals(listOf(account.userId), vault.forgotten)
        // Signing out revoked the second sign-in on the server too.
        assertEquals(401, http("DELETE", "/api/devices/$deviceId", token2).first)
        phone.close()
    }

    /** A direct question to the e2e user, as the agent asks it; its JSON. */
    private fun ask(prompt: String): JSONObject {
        val (asked, q) = http("POST", "/api/agent/rooms/OPS123/questions", env("QP_E2E_AGENT_TOKEN"),
            """{"prompt":"$prompt","target_user_id":"${env("QP_E2E_USER")}",
               "options":[{"value":"yes","label":"Yes","style":"primary"},{"value":"no","label":"No"}]}""")
        assertEquals(201, asked)
        return q
    }

    // Issue 31: FCM hands the token over (onNewToken) before the person
    // pairs; the sign-in registers it, in the pairing call, once.
    @Test
    fun aTokenHandedOverBeforePairingIsRegisteredBySignInOnce() = runBlocking {
        assumeTrue("run through android/run-tests", System.getenv("QP_E2E_ADMIN_TOKEN") != null)
        val sdk = android.os.Build.VERSION.SDK_INT
        val vault = Vault()
        val phone = PhoneCore.openSession(File(Files.createTempDirectory("qp-token").toFile(), "p.sqlite").path,
            StoreMode.APP, vault, listOf("en"))
        val fcm = "fcm-before-pairing-$sdk"
        assertFalse("signed out: kept, nothing sent", phone.updatePushToken(fcm))
        assertEquals(fcm, vault.tokens["qp.push-token"])
        val account = phone.signIn(pairLink(), "Pixel (token first)", null,
            DeviceRegistration(Platform.ANDROID, appId = "io.questionprotocol.test"))
        val deviceId = account.deviceId!!
        assertEquals(deviceId, phone.sessionStatus().deviceId)
        assertFalse("the same token: not sent again", phone.updatePushToken(fcm))
        assertEquals(deviceId, phone.sessionStatus().deviceId)
        // The device exists on the server: removing it is a 204.
        assertEquals(204, http("DELETE", "/api/devices/$deviceId", vault.tokens[account.userId]!!).first)
        phone.signOut()
        phone.close()
    }

    // Issue 31: a new token is a new device id; a second core on the same
    // store, opened before the change and given no device id, opens the
    // push sealed to the new one. Then signing out: the unsent answer is
    // sent first, the token revoked, and a push after it is the neutral
    // notification, which opens the app at the question it names.
    @Test
    fun aNewTokenASealedPushThenSigningOut() = runBlocking {
        assumeTrue("run through android/run-tests", System.getenv("QP_E2E_ADMIN_TOKEN") != null)
        val sdk = android.os.Build.VERSION.SDK_INT
        val context = org.robolectric.RuntimeEnvironment.getApplication()
        val store = File(Files.createTempDirectory("qp-sealed").toFile(), "shared.sqlite").path
        val vault = Vault()
        val keys = MemoryKeyStore(null)
        val app = PhoneCore.openSession(store, StoreMode.APP, vault, listOf("en"), deviceKeys = keys)
        val other = PhoneCore.openSession(store, StoreMode.APP, vault, listOf("en"), deviceKeys = keys)
        val publicKey = app.devicePublicKey()
        val account = app.signIn(pairLink(), "Pixel (sealed)", null,
            DeviceRegistration(Platform.ANDROID, "fcm-sealed-$sdk-a", "io.questionprotocol.test", publicKey = publicKey))
        val first = account.deviceId!!
        assertTrue(app.updatePushToken("fcm-sealed-$sdk-b"))
        val second = app.sessionStatus().deviceId!!
        assertTrue("a new token is a new device", first != second)
        val q = ask("Sealed to the new device (SDK $sdk)?")
        val notifier = QuestionNotifier(context, other, TestReceiver::class.java, android.R.drawable.ic_dialog_info,
            openApp = { android.content.Intent(android.content.Intent.ACTION_VIEW).putExtra("question", it) })
        val shown = notifier.onDataMessage(encodeFcmSealedPayload(q.toString(), second, publicKey).data)
        assertEquals(QuestionNotifier.Result.Posted(q.getString("id"), androidNotificationId(q.getString("id"))), shown)

        // An answer committed, not sent yet: signing out sends it first.
        app.answerInApp(q.getString("id"), "yes", null)
        assertEquals(1u, app.unsentAnswers())
        val token = vault.tokens[account.userId]!!
        val out = app.signOut()
        assertEquals(SignOutReport(deviceRemoved = true, tokenRevoked = true, serverPending = false,
            unsentAnswersDropped = 0u, answersWithTheSystem = 0u), out)
        val (_, seen) = http("GET", "/api/agent/questions/${q.getString("id")}", env("QP_E2E_AGENT_TOKEN"))
        assertEquals("yes", seen.getJSONObject("answer").getString("value"))
        assertEquals("the sign-in is revoked", 401, http("DELETE", "/api/devices/$second", token).first)

        // After signing out, the other core takes no push: the neutral
        // notification, whose tap opens the app at the question it names.
        val later = ask("After signing out (SDK $sdk)?")
        val result = notifier.onDataMessage(encodeFcmSealedPayload(later.toString(), second, publicKey).data)
        assertTrue("$result", result is QuestionNotifier.Result.Fallback)
        val manager = context.getSystemService(android.app.NotificationManager::class.java)!!
        val fallback = org.robolectric.Shadows.shadowOf(manager).getNotification(QuestionIntents.FALLBACK_TAG, 0)
        assertEquals("New question", fallback.extras.getString(android.app.Notification.EXTRA_TITLE))
        val tap = org.robolectric.Shadows.shadowOf(fallback.contentIntent).savedIntent
        assertEquals(later.getString("id"), tap.getStringExtra("question"))
        assertNull(other.question(later.getString("id")))
        assertTrue(app.feed().isEmpty())
        // Leave no question pending for the other suites of this server.
        assertEquals(200, http("POST", "/api/agent/questions/${later.getString("id")}/cancel", env("QP_E2E_AGENT_TOKEN"), "{}").first)
        other.close()
        app.close()
    }

    @Test
    fun theFeedSubscriptionFiresWhenTheExtensionProcessRecordsAPush() = runBlocking {
        val nse = System.getenv("QP_E2E_NSE")
        assumeTrue("run through android/run-tests", nse != null)
        val store = File(Files.createTempDirectory("qp-watch").toFile(), "shared.sqlite").path
        val phone = PhoneCore.openSession(store, StoreMode.APP, Vault(), listOf())
        // The messaging service's process over the app's store, opened as
        // the README's code opens it (openSession, nothing given): signed
        // out, it records nothing; then the app signs in.
        fun runExtension(): Pair<Int, String> {
            val p = ProcessBuilder(nse, store, "--session").redirectErrorStream(false).start()
            val out = p.inputStream.bufferedReader().readText().trim()
            return p.waitFor() to out
        }
        assertEquals(3 to "signed-out", runExtension())
        assertTrue("signed out: nothing recorded", phone.feed().isEmpty())
        phone.signIn(pairLink(), "Pixel (two processes)", null, null)
        val fired = java.util.concurrent.CountDownLatch(1)
        val subscription = phone.subscribeFeed(object : FeedListener {
            override fun feedChanged() { fired.countDown() }
        })
        // The glue's Flow over the same signal, collected as an app would.
        val feeds = java.util.concurrent.LinkedBlockingQueue<List<FeedCell>>()
        val collector = launch(kotlinx.coroutines.Dispatchers.IO) { phone.feedUpdates().collect { feeds.put(it) } }
        assertEquals("feedUpdates() starts with the feed as it is", 0, feeds.poll(5, java.util.concurrent.TimeUnit.SECONDS)?.size)
        Thread.sleep(400)
        assertEquals("nothing committed, nothing said", 1L, fired.count)
        assertTrue("no second feed before a commit", feeds.isEmpty())
        // The other process: opens the same store (the session the app
        // signed in to), decodes a push and records it.
        val (status, output) = runExtension()
        assertEquals(output, 0, status)
        val (category, user) = output.split(" ")
        assertEquals("addressed to whoever the store says is signed in", env("QP_E2E_USER"), user)
        assertTrue("the app heard of the other process's commit", fired.await(5, java.util.concurrent.TimeUnit.SECONDS))
        val recordedId = category.removePrefix("qp.q.")
        val recorded = phone.question(recordedId)
        assertEquals("Deploy v1.4.0 to production?", recorded?.prompt)
        val withIt = generateSequence { feeds.poll(5, java.util.concurrent.TimeUnit.SECONDS) }
            .firstOrNull { cells -> cells.any { it.questionId == recordedId } }
        assertTrue("feedUpdates() emitted the feed with the extension's question", withIt != null)
        collector.cancel()
        // The same feed, read off the caller's thread.
        assertEquals(phone.feed(), phone.feedAsync())
        subscription.cancel()
        phone.signOut()
        phone.close()
    }
}
