// Presentation on Android, under Robolectric: one summary per room carrying
// the count, withdrawn with the room's last question; the pending count as
// each notification's number; the app's channel importance and sound; and
// the README's service and activity as written: a tap opens the app's launch
// activity at the question.
package io.questionprotocol.android

import android.app.Notification
import android.app.NotificationManager
import android.content.ComponentName
import android.content.Context
import android.content.Intent
import android.content.IntentFilter
import io.questionprotocol.core.*
import io.questionprotocol.snippets.AccountScreen
import io.questionprotocol.snippets.App
import io.questionprotocol.snippets.Foreground
import io.questionprotocol.snippets.Keystore
import io.questionprotocol.snippets.KeystoreDeviceKey
import io.questionprotocol.snippets.MainActivity
import io.questionprotocol.snippets.QpMessagingService
import io.questionprotocol.snippets.Router
import io.questionprotocol.standins.AndroidKeyStoreStandIn
import com.google.firebase.messaging.FirebaseMessaging
import com.google.firebase.messaging.RemoteMessage
import kotlinx.coroutines.runBlocking
import org.junit.After
import org.junit.Assert.assertEquals
import org.junit.Assert.assertFalse
import org.junit.Assert.assertNotNull
import org.junit.Assert.assertNull
import org.junit.Assert.assertTrue
import org.junit.Before
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.Robolectric
import org.robolectric.RobolectricTestRunner
import org.robolectric.RuntimeEnvironment
import org.robolectric.Shadows.shadowOf
import java.io.File
import java.nio.file.Files
import java.time.Instant

@RunWith(RobolectricTestRunner::class)
class PresentationTest {
    private lateinit var context: Context
    private lateinit var dir: File
    private lateinit var core: PhoneCore
    private val manager get() = checkNotNull(context.getSystemService(NotificationManager::class.java))

    private fun question(id: String, prompt: String, room: String): String = toJson(mapOf(
        "id" to id, "kind" to "question", "prompt" to prompt, "context" to null,
        "options" to listOf(mapOf("value" to "approve", "label" to "Approve", "style" to "primary"),
            mapOf("value" to "deny", "label" to "Deny", "style" to "danger")),
        "text_input" to null, "responder_scope" to "room", "target_user_id" to null, "resolution_policy" to "first",
        "state" to "pending", "answer" to null, "expires_at" to Instant.now().plusSeconds(3600).toString(),
        "resolved_at" to null, "correlation_id" to null, "reply_to" to null, "data" to null,
        "created_at" to Instant.now().toString(),
        "room" to mapOf("code" to room, "name" to "Room $room"),
        "asker" to mapOf("type" to "agent", "id" to "a_1", "display_name" to "Release Bot"),
    ))

    private fun push(id: String, prompt: String, room: String) = encodeFcmPayload(question(id, prompt, room)).data

    private fun summaries() = manager.activeNotifications.filter { it.notification.flags and Notification.FLAG_GROUP_SUMMARY != 0 }

    @Before
    fun setUp() {
        context = RuntimeEnvironment.getApplication()
        AndroidKeyStoreStandIn.install()
        dir = Files.createTempDirectory("qp-present").toFile()
        core = PhoneCore(File(dir, "phone.sqlite").path, StoreMode.APP, "http://127.0.0.1:9", "u_me", StaticToken("qpu_x"), listOf("en"))
        TestReceiver.core = core
    }

    @After
    fun tearDown() { core.close(); dir.deleteRecursively() }

    private fun notifier(options: PresentOptions = PresentOptions()) =
        QuestionNotifier(context, core, TestReceiver::class.java, android.R.drawable.ic_dialog_info, options = options)

    @Test
    fun aRoomGetsOneSummaryWithItsCountUntilItsLastQuestionGoes() {
        val n = notifier()
        n.onDataMessage(push("q_a", "Deploy?", "OPS"))
        n.onDataMessage(push("q_b", "Merge?", "OPS"))
        n.onDataMessage(push("q_c", "Rotate?", "SEC"))
        val ops = summaries().single { it.notification.group == "qp.room.OPS" }.notification
        assertEquals(2, ops.number)
        assertEquals("Room OPS", ops.extras.getString(Notification.EXTRA_TITLE))
        assertEquals(listOf("Merge?", "Deploy?").toSet(),
            ops.extras.getCharSequenceArray(Notification.EXTRA_TEXT_LINES)!!.map { it.toString() }.toSet())
        assertEquals(1, summaries().single { it.notification.group == "qp.room.SEC" }.notification.number)
        // A summary is never taken for a question (reconcile leaves it alone).
        n.reconcile()
        assertEquals(2, summaries().size)

        n.withdraw("q_a")
        assertEquals(1, summaries().single { it.notification.group == "qp.room.OPS" }.notification.number)
        n.withdraw("q_b")
        assertNull("no summary over an empty room", summaries().firstOrNull { it.notification.group == "qp.room.OPS" })
        assertEquals(1, summaries().size)
    }

    @Test
    fun eachNotificationCarriesThePendingCount() {
        val n = notifier()
        n.onDataMessage(push("q_1", "One?", "OPS"))
        n.onDataMessage(push("q_2", "Two?", "OPS"))
        val second = shadowOf(manager).getNotification("q_2", androidNotificationId("q_2"))
        assertEquals(2, second.number)
        assertEquals(2u, core.badgeCount())
        core.answerAction("q_1", "qp.v.approve", null)
        assertEquals("an answer given (even queued) is no longer pending", 1u, core.badgeCount())
    }

    @Test
    fun theChannelTakesTheAppsImportanceAndSound() {
        notifier(PresentOptions(sound = NotificationSound.Silent, channelImportance = ChannelImportance.LOW))
            .onDataMessage(push("q_q", "Quiet?", "OPS"))
        val channel = manager.getNotificationChannel("qp.questions")
        assertEquals(NotificationManager.IMPORTANCE_LOW, channel.importance)
        assertNull("silent", channel.sound)
    }

    @Test
    fun theDefaultTapOpensTheLaunchActivityAtTheQuestionAsTheReadmeShows() {
        // The app's launcher activity, as its manifest would declare it.
        val main = ComponentName(context, MainActivity::class.java)
        shadowOf(context.packageManager).addActivityIfNotPresent(main)
        shadowOf(context.packageManager).addIntentFilterForActivity(main,
            IntentFilter(Intent.ACTION_MAIN).apply { addCategory(Intent.CATEGORY_LAUNCHER) })
        App.opened = core
        val service = Robolectric.buildService(QpMessagingService::class.java).create().get()
        service.onMessageReceived(RemoteMessage(push("q_open", "Open me?", "OPS")))
        val posted = shadowOf(manager).getNotification("q_open", androidNotificationId("q_open"))
        val tap = shadowOf(posted.contentIntent).savedIntent
        assertEquals(main, tap.component)
        assertEquals("q_open", QuestionIntents.questionToOpen(tap))
        Router.opened.clear()
        val activity = Robolectric.buildActivity(MainActivity::class.java, tap).create().get()
        assertEquals(listOf("q_open"), Router.opened)
        // Android 13+: the activity asks for POST_NOTIFICATIONS; before, nothing to ask.
        val asked = shadowOf(activity).lastRequestedPermission?.requestedPermissions?.toList()
        if (android.os.Build.VERSION.SDK_INT >= 33) {
            assertEquals(listOf(android.Manifest.permission.POST_NOTIFICATIONS), asked)
        } else {
            assertNull(asked)
        }
        // FCM's token, before the person pairs: the README's service gives it
        // to the process's session core, which keeps it in the app's Keystore
        // storage (not the store) for the sign-in.
        App.opened = null
        val session = App.core(context)
        assertEquals(SessionState.SIGNED_OUT, session.sessionStatus().state)
        service.onNewToken("fcm-token-before-pairing")
        assertEquals("fcm-token-before-pairing", io.questionprotocol.snippets.Keystore(context).token("qp.push-token"))
        session.close()
        App.opened = null
    }

    /** The app's own notification, on a channel of its own (not the library's). */
    private fun postAppsOwn() {
        manager.createNotificationChannel(android.app.NotificationChannel("app.chat", "Chat", NotificationManager.IMPORTANCE_DEFAULT))
        manager.notify("chat", 7, Notification.Builder(context, "app.chat")
            .setSmallIcon(android.R.drawable.ic_dialog_info).setContentText("Lunch?").build())
    }

    // The README's foreground refresh, signed out (before pairing), must not
    // crash with NotSignedIn as flush(); sync(); reconcile() would: each step
    // is caught and reported, and FCM's current token is asked for and kept
    // for the sign-in.
    @Test
    fun theForegroundRefreshSignedOutOrOfflineReportsInsteadOfThrowing() = runBlocking {
        App.opened = null
        FirebaseMessaging.standInToken = "fcm-current-at-launch"
        Foreground.refresh(context).join()
        val session = App.core(context)
        for (i in 0 until 100) {
            if (Keystore(context).token("qp.push-token") != null) break
            Thread.sleep(20)
        }
        assertEquals("FCM's current token, asked for at launch, kept for the sign-in",
            "fcm-current-at-launch", Keystore(context).token("qp.push-token"))
        val signedOut = QuestionNotifier(context, session, TestReceiver::class.java, android.R.drawable.ic_dialog_info)
            .refresh()
        assertNull(signedOut.flushed)
        assertNull(signedOut.synced)
        assertTrue("${signedOut.failures}", signedOut.failures.size == 2 && signedOut.failures.all { it is QpException.NotSignedIn })
        assertNotNull("reconciled all the same", signedOut.plan)
        assertEquals(SessionState.SIGNED_OUT, signedOut.state)
        assertNull(signedOut.statusLine)
        // Offline (a server nobody answers at): reported, never thrown.
        val offline = notifier().refresh()
        assertNotNull("an empty outbox sends nothing", offline.flushed)
        assertNull(offline.synced)
        assertTrue("${offline.failures}", offline.failures.size == 1 && offline.failures.single() is QpException.Network)
        assertNotNull(offline.plan)
        session.close()
        App.opened = null
        FirebaseMessaging.standInToken = null
    }

    // On a shared phone, signing out through the README's account screen
    // removes the library's notifications (a question, its room's summary, a
    // fallback), not the app's own.
    @Test
    fun signingOutRemovesTheLibrarysNotificationsNotTheAppsOwn() = runBlocking {
        val n = notifier()
        n.onDataMessage(push("q_x", "Still mine?", "OPS"))
        n.onDataMessage(mapOf("qp" to "not a question"))
        postAppsOwn()
        assertTrue(manager.activeNotifications.size >= 4)
        val session = PhoneCore.openSession(File(dir, "session.sqlite").path, StoreMode.APP, SessionTest.Vault(), listOf("en"))
        assertEquals(null, AccountScreen.signOut(session, context))
        assertEquals(listOf("chat"), manager.activeNotifications.map { it.tag })
        session.close()
    }

    // Issue 48 (6): the docs' vault on the platform's Android Keystore (an
    // AES-GCM key, no androidx.security): a token sealed and read back, in
    // another instance too (the next process); stored sealed, never as
    // written; a value moved to another slot does not open. Restored from a
    // backup onto a phone whose Keystore lacks the key (a new phone): the
    // old tokens are forgotten, not thrown in every process, and new ones
    // work. Under Robolectric the provider is a stand-in (it has none).
    @Test
    fun theKeystoreVaultSealsTokensAndForgetsOnesSealedByAnotherPhonesKey() {
        val vault = Keystore(context)
        vault.saveToken("u_me", "qpu_secret")
        assertEquals("qpu_secret", Keystore(context).token("u_me"))
        val prefs = context.getSharedPreferences("qp", Context.MODE_PRIVATE)
        val stored = checkNotNull(prefs.getString("u_me", null))
        assertFalse("sealed, not stored as written", stored.contains("qpu_secret"))
        prefs.edit().putString("u_other", stored).commit()
        assertNull("bound to its slot", Keystore(context).token("u_other"))

        AndroidKeyStoreStandIn.wipe() // the file restored onto a new phone: its Keystore has no such key
        val restored = Keystore(context)
        assertNull(restored.token("u_me"))
        assertFalse("forgotten", prefs.contains("u_me"))
        restored.saveToken("u_after", "qpu_new")
        assertEquals("qpu_new", Keystore(context).token("u_after"))
    }

    // The README's device key store keeps the key in the Keystore-encrypted
    // file, beside the tokens (so out of backups with them), and the core's
    // public key survives a new process.
    @Test
    fun theReadmesDeviceKeyStoreKeepsTheKeyBesideTheTokens() {
        val keys = KeystoreDeviceKey(context)
        assertNull(keys.loadDeviceKey())
        val first = PhoneCore.openSession(File(dir, "k.sqlite").path, StoreMode.APP, Keystore(context), listOf("en"),
            deviceKeys = keys)
        val public = first.devicePublicKey()
        first.close()
        assertEquals(32, KeystoreDeviceKey(context).loadDeviceKey()?.size)
        assertTrue(context.getSharedPreferences("qp", Context.MODE_PRIVATE).contains("app.device-key"))
        val again = PhoneCore.openSession(File(dir, "k.sqlite").path, StoreMode.APP, Keystore(context), listOf("en"),
            deviceKeys = KeystoreDeviceKey(context))
        assertEquals("the same key in the next process", public, again.devicePublicKey())
        again.close()
    }
}
