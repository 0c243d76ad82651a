// End to end against a real `qp serve` started by android/run-tests: an
// FCM payload decoded and recorded, an answer given offline, a new process,
// the flush. Skipped (with a message) when run outside that script.
package io.questionprotocol.android

import io.questionprotocol.core.*
import kotlinx.coroutines.runBlocking
import org.junit.Assert.assertEquals
import org.junit.Assume.assumeTrue
import org.junit.Test
import java.io.File

class EndToEndTest {
    // The phone's requests go through HttpURLConnection, as in an app.
    init { HttpUrlConnectionTransport.install() }

    private fun env(k: String): String = System.getenv(k)!!

    @Test
    fun anOfflineAnswerReachesTheAskerOnce() {
        assumeTrue("run through android/run-tests", System.getenv("QP_E2E_URL") != null)
        val user = env("QP_E2E_USER")
        val token = StaticToken(env("QP_E2E_USER_TOKEN"))
        val store = File(env("QP_E2E_STORE_DIR"), "kotlin-phone.sqlite").path
        val data = encodeFcmPayload(File(env("QP_E2E_QUESTION")).readText()).data

        // The FCM handler's process: decode and record, no network.
        val handler = PhoneCore(store, StoreMode.EXTENSION, env("QP_E2E_DEAD_URL"), user, token, listOf())
        val q = (handler.receiveFcm(data) as DecodedPush.Question).question
        assertEquals("Release Bot asks you", androidNotification(q, java.time.Instant.now(), false, listOf()).title)
        assertEquals("Release Bot fragt dich", androidNotification(q, java.time.Instant.now(), false, listOf("de-AT")).title)
        handler.close()

        // The receiver's process, offline: committed, then a failed send.
        val offline = PhoneCore(store, StoreMode.APP, env("QP_E2E_DEAD_URL"), user, token, listOf())
        assertEquals(AnswerState.QUEUED, offline.answerAction(q.id, "qp.v.approve", null).state)
        assertEquals(1u, runBlocking { offline.flush() }.willRetry)
        assertEquals(true, offline.feed().single().myAnswer!!.canRetry)
        offline.close()

        // A new process, online.
        val app = PhoneCore(store, StoreMode.APP, env("QP_E2E_URL"), user, token, listOf())
        app.requeueInterrupted()
        app.retry(q.id)
        val report = runBlocking { app.flush() }
        assertEquals(1u, report.answered)
        assertEquals(listOf(q.id), report.withdraw)
        assertEquals("You answered: Approve", app.feed().single().resolution)
        assertEquals(0u, runBlocking { app.sync() }.pending)
        app.close()
    }

    @Test
    fun badInputIsATypedException() {
        try {
            PhoneCore("/nonexistent/dir/x.sqlite", StoreMode.APP, "http://127.0.0.1:9", "u", StaticToken(null), listOf())
            error("expected a Storage exception")
        } catch (e: QpException.Storage) {
            assertEquals(StoreErrorKind.CANNOT_OPEN, e.kind)
        }
        try {
            decodeApnsPayload("{")
            error("expected a Payload exception")
        } catch (e: QpException.Payload) {
            assertEquals(PayloadErrorKind.NOT_JSON, e.kind)
        }
    }

    /** The app's Keystore-backed storage, in memory. */
    class FakeKeystore : SecureStore, TokenProvider {
        val saved = java.util.concurrent.ConcurrentHashMap<String, String>()
        override fun saveToken(userId: String, token: String) { saved[userId] = token }
        override fun token(): String? = saved.values.firstOrNull()
    }

    @Test
    fun pairingPutsTheTokenInTheSecureStoreAndSignsThePhoneIn() {
        assumeTrue("run through android/run-tests", System.getenv("QP_E2E_URL") != null)
        val keystore = FakeKeystore()
        val device = DeviceRegistration(Platform.ANDROID, "fcm-kotlin-test", "io.questionprotocol.test", "fr-FR")
        val account = runBlocking {
            pairDevice(env("QP_E2E_PAIR_LINK"), null, "Pixel (test)", device, keystore)
        }
        assertEquals(env("QP_E2E_USER"), account.userId)
        assertEquals(env("QP_E2E_URL"), account.serverUrl)
        assertEquals(true, account.deviceId != null)
        assertEquals(true, keystore.saved[account.userId]!!.startsWith("qpu_"))
        // Signed in with what the store kept; with an empty store the same
        // phone is refused.
        val unpaired = PhoneCore(File(env("QP_E2E_STORE_DIR"), "kotlin-unpaired.sqlite").path,
            StoreMode.APP, account.serverUrl, account.userId, FakeKeystore(), listOf())
        try {
            runBlocking { unpaired.sync() }
            error("expected NotSignedIn")
        } catch (e: QpException.NotSignedIn) {
        }
        unpaired.close()
        val phone = PhoneCore(File(env("QP_E2E_STORE_DIR"), "kotlin-paired.sqlite").path,
            StoreMode.APP, account.serverUrl, account.userId, keystore, listOf("fr-FR"))
        assertEquals("fr", phone.language())
        runBlocking { phone.sync() }
        phone.close()
        // The link works once.
        try {
            runBlocking { pairDevice(env("QP_E2E_PAIR_LINK"), null, "again", null, FakeKeystore()) }
            error("expected a Pairing exception")
        } catch (e: QpException.Pairing) {
            assertEquals(PairErrorKind.INVALID_CODE, e.kind)
        }
    }
}
