// The Android glue against the real framework API, under Robolectric:
// the posted notification, its actions, RemoteInput and PendingIntent flags,
// and the receiver committing the answer.
package io.questionprotocol.android

import android.app.Notification
import android.app.NotificationManager
import android.app.PendingIntent
import android.app.RemoteInput
import android.content.Context
import android.content.Intent
import android.os.Bundle
import io.questionprotocol.core.*
import org.junit.After
import org.junit.Assert.assertEquals
import org.junit.Assert.assertNotNull
import org.junit.Assert.assertNull
import org.junit.Assert.assertTrue
import org.junit.Before
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.RobolectricTestRunner
import org.robolectric.RuntimeEnvironment
import org.robolectric.Shadows.shadowOf
import org.robolectric.annotation.Config
import java.io.File
import java.nio.file.Files

class TestReceiver : QuestionAnswerReceiver() {
    companion object {
        var core: PhoneCore? = null
        var flushes = 0
    }
    override fun core(context: Context): PhoneCore = core!!
    override fun scheduleFlush(context: Context) { flushes++ }
    override val smallIcon: Int = android.R.drawable.ic_dialog_info
    // Inline, so a test sees the delivery attempt's outcome on return.
    override fun runInBackground(work: () -> Unit) = work()
    override fun openApp(context: Context, questionId: String): Intent =
        Intent(Intent.ACTION_VIEW).putExtra("question", questionId)
}

/** A receiver whose notifications cannot be posted (the app's icon throws). */
class NoIconReceiver : QuestionAnswerReceiver() {
    companion object {
        var flushes = 0
    }
    override fun core(context: Context): PhoneCore = TestReceiver.core!!
    override fun scheduleFlush(context: Context) { flushes++ }
    override val smallIcon: Int get() = throw IllegalStateException("the app's icon")
    override fun runInBackground(work: () -> Unit) = work()
}

/** A receiver as an app writes it, its work on the library's own thread;
 *  it records whether the core was asked for on the main thread. */
class ThreadedReceiver : QuestionAnswerReceiver() {
    companion object {
        @Volatile var core: () -> PhoneCore = { error("no core") }
        val onMainThread = java.util.Collections.synchronizedList(mutableListOf<Boolean>())
        val reported = java.util.Collections.synchronizedList(mutableListOf<String>())
    }
    override fun core(context: Context): PhoneCore {
        onMainThread += android.os.Looper.myLooper() == android.os.Looper.getMainLooper()
        return core()
    }
    override fun scheduleFlush(context: Context) {}
    override val smallIcon: Int = android.R.drawable.ic_dialog_info
    override fun openApp(context: Context, questionId: String): Intent =
        Intent(Intent.ACTION_VIEW).putExtra("question", questionId)
    override fun reportFailure(site: String, error: Throwable) {
        reported += "$site: ${error.javaClass.simpleName}"
        super.reportFailure(site, error)
    }
}

/** An app's key store whose Keystore cannot decrypt (a phone restored from a backup). */
class ThrowingKeyStore : DeviceKeyStore {
    override fun loadDeviceKey(): ByteArray? = throw java.security.GeneralSecurityException("cannot decrypt")
    override fun saveDeviceKey(key: ByteArray): Boolean = throw java.security.GeneralSecurityException("cannot encrypt")
}

class StaticToken(private val value: String?) : TokenProvider {
    override fun token(): String? = value
}

// The SDK levels come from robolectric.properties (26, 29, 31, 33, 35).
@RunWith(RobolectricTestRunner::class)
class AndroidGlueTest {
    // The phone's requests go through HttpURLConnection, as in an app.
    init { HttpUrlConnectionTransport.install() }

    private lateinit var context: Context
    private lateinit var dir: File
    private lateinit var core: PhoneCore
    private lateinit var notifier: QuestionNotifier
    private val manager get() = checkNotNull(context.getSystemService(NotificationManager::class.java))

    private fun question(id: String, options: List<Map<String, Any?>>, text: Boolean): Map<String, Any?> = mapOf(
        "id" to id, "kind" to "question", "prompt" to "Deploy v1.4.0?", "context" to "Build #4821",
        "options" to options, "text_input" to if (text) mapOf("placeholder" to "or say why", "max_length" to 20) else null,
        "responder_scope" to "room", "target_user_id" to null, "resolution_policy" to "first", "state" to "pending",
        "answer" to null, "expires_at" to "2030-06-27T11:30:00Z", "resolved_at" to null, "correlation_id" to null,
        "reply_to" to null, "data" to null, "created_at" to "2026-06-27T10:30:00Z",
        "room" to mapOf("code" to "OPS123", "name" to "Ops"),
        "asker" to mapOf("type" to "agent", "id" to "a_1", "display_name" to "Release Bot"),
    )

    private fun opt(v: String, l: String, s: String = "default") = mapOf("value" to v, "label" to l, "style" to s)

    @Before
    fun setUp() {
        context = RuntimeEnvironment.getApplication()
        dir = Files.createTempDirectory("qp-android").toFile()
        core = PhoneCore(File(dir, "phone.sqlite").path, StoreMode.APP, "http://127.0.0.1:9", "u_me", StaticToken("qpu_x"), listOf("en"))
        TestReceiver.core = core
        TestReceiver.flushes = 0
        notifier = QuestionNotifier(context, core, TestReceiver::class.java, android.R.drawable.ic_dialog_info,
            openApp = { Intent(Intent.ACTION_VIEW).putExtra("question", it) })
    }

    @After
    fun tearDown() { core.close(); dir.deleteRecursively() }

    private fun posted(id: String): Notification =
        shadowOf(manager).getNotification(id, androidNotificationId(id)) ?: error("no notification for $id")

    private fun flags(pi: PendingIntent) = shadowOf(pi).flags

    @Test
    fun twoOptionsAndTextPostButtonsInOrderThenReply() {
        val data = encodeFcmPayload(toJson(question("q_two", listOf(opt("approve", "Approve", "primary"), opt("deny", "Deny", "danger")), true))).data
        val result = notifier.onDataMessage(data)
        assertEquals(QuestionNotifier.Result.Posted("q_two", androidNotificationId("q_two")), result)
        val n = posted("q_two")
        assertEquals("qp.questions", n.channelId)
        assertEquals(NotificationManager.IMPORTANCE_HIGH, manager.getNotificationChannel("qp.questions").importance)
        assertEquals("Release Bot asks the room", n.extras.getString(Notification.EXTRA_TITLE))
        assertEquals("Deploy v1.4.0?", n.extras.getCharSequence(Notification.EXTRA_TEXT).toString())
        assertEquals(listOf("Approve", "Deny", "Reply"), n.actions.map { it.title.toString() })
        // Buttons: immutable, no RemoteInput. Reply: mutable, a free-form RemoteInput.
        for (i in 0..1) {
            assertNull(n.actions[i].remoteInputs)
            assertTrue(flags(n.actions[i].actionIntent) and PendingIntent.FLAG_IMMUTABLE != 0)
        }
        val reply = n.actions[2]
        assertTrue(flags(reply.actionIntent) and PendingIntent.FLAG_MUTABLE != 0)
        assertEquals("qp.text", reply.remoteInputs.single().resultKey)
        assertEquals("or say why", reply.remoteInputs.single().label.toString())
        assertTrue(reply.remoteInputs.single().allowFreeFormInput)
        // Request codes unique per question and action.
        val codes = n.actions.map { shadowOf(it.actionIntent).requestCode }
        assertEquals((1u..3u).map { androidRequestCode("q_two", it) }, codes)
        assertEquals(androidRequestCode("q_two", 0u), shadowOf(n.contentIntent).requestCode)
        assertEquals("qp.v.approve", shadowOf(n.actions[0].actionIntent).savedIntent.getStringExtra(QuestionIntents.EXTRA_ACTION_ID))
    }

    @Test
    fun fourOptionsOfferChoicesThroughOneAction() {
        val opts = listOf(opt("dev", "Dev"), opt("staging", "Staging"), opt("prod", "Production", "primary"), opt("cancel", "Cancel", "danger"))
        notifier.onDataMessage(encodeFcmPayload(toJson(question("q_four", opts, false))).data)
        val n = posted("q_four")
        assertEquals(1, n.actions.size)
        val input = n.actions[0].remoteInputs.single()
        assertEquals("qp.choice", input.resultKey)
        assertEquals(listOf("Dev", "Staging", "Production", "Cancel"), input.choices.map { it.toString() })
        assertTrue(!input.allowFreeFormInput)
        assertNotNull("a tap opens the app (the spec's fallback)", n.contentIntent)
    }

    private fun tap(n: Notification, index: Int, typed: String?): TestReceiver {
        val action = n.actions[index]
        val intent = Intent(shadowOf(action.actionIntent).savedIntent)
        if (typed != null) {
            val input = action.remoteInputs.single()
            RemoteInput.addResultsToIntent(arrayOf(input), intent, Bundle().apply { putCharSequence(input.resultKey, typed) })
        }
        return TestReceiver().also { it.onReceive(context, intent) }
    }

    @Test
    fun theReceiverCommitsATypedReplyAndUpdatesTheNotificationAtOnce() {
        notifier.onDataMessage(encodeFcmPayload(toJson(question("q_text", listOf(opt("approve", "Approve"), opt("deny", "Deny")), true))).data)
        val receiver = tap(posted("q_text"), 2, "  ship it  ")
        val outcome = receiver.lastOutcome as QuestionAnswerReceiver.Outcome.Committed
        assertEquals(AnswerState.QUEUED, outcome.answer.state)
        assertEquals(1, TestReceiver.flushes)
        // The receiver tried to send at once (the server is unreachable here)
        // and handed the answer to background work.
        val cell = core.feed().single()
        assertEquals("“ship it”: not sent yet, server unreachable; will retry", cell.myAnswer!!.status)
        assertTrue(cell.myAnswer!!.canRetry)
        val updated = posted("q_text")
        assertNull("no buttons left to tap (and no spinner)", updated.actions)
        // The core's status line, the same words the feed shows.
        assertEquals(cell.myAnswer!!.status, updated.extras.getCharSequence(Notification.EXTRA_TEXT).toString())
    }

    /** The notification's update failing after
     *  the commit skipped the retry job; the committed answer waited for
     *  the next launch. */
    @Test
    fun aCommittedAnswerWhoseNotificationCannotBeUpdatedIsStillRetried() {
        notifier.onDataMessage(encodeFcmPayload(toJson(question("q_icon", listOf(opt("approve", "Approve"), opt("deny", "Deny")), false))).data)
        NoIconReceiver.flushes = 0
        val intent = Intent(shadowOf(posted("q_icon").actions[0].actionIntent).savedIntent)
        NoIconReceiver().onReceive(context, intent)
        assertEquals(AnswerState.QUEUED, core.feed().single().myAnswer!!.state)
        assertEquals("the retry job is scheduled", 1, NoIconReceiver.flushes)
    }

    @Test
    fun aChosenLabelMapsBackToItsValueAndTooLongTextIsKept() {
        val opts = listOf(opt("dev", "Dev"), opt("staging", "Staging"), opt("prod", "Production"))
        notifier.onDataMessage(encodeFcmPayload(toJson(question("q_pick", opts, true))).data)
        val n = posted("q_pick")
        assertEquals(listOf("Choose…", "Reply"), n.actions.map { it.title.toString() })
        tap(n, 0, "Production")
        assertEquals("Production: not sent yet, server unreachable; will retry", core.feed().single().myAnswer!!.status)

        notifier.onDataMessage(encodeFcmPayload(toJson(question("q_long", opts, true))).data)
        val receiver = tap(posted("q_long"), 1, "x".repeat(25))
        val needs = receiver.lastOutcome as QuestionAnswerReceiver.Outcome.NeedsApp
        assertEquals("Your reply is 25 characters; the limit is 20. Open the app to shorten it.", needs.message)
        assertEquals("Open the app to finish your answer",
            posted("q_long").extras.getCharSequence(Notification.EXTRA_TEXT).toString())
        // A tap on it opens the app at that question.
        assertEquals("q_long", shadowOf(posted("q_long").contentIntent).savedIntent.getStringExtra("question"))
        assertEquals("x".repeat(25), core.feed().first { it.questionId == "q_long" }.textField!!.draft)
        assertEquals(0, TestReceiver.flushes - 1)
    }

    @Test
    fun aResolvedPushTheServerDidNotConfirmIsKeptAndGarbageStillShowsSomething() {
        notifier.onDataMessage(encodeFcmPayload(toJson(question("q_gone", listOf(opt("a", "A"), opt("b", "B")), false))).data)
        posted("q_gone")
        // Issue 32, finding 1: a resolution push is a claim; the server
        // (unreachable here) did not confirm it, so nothing is withdrawn.
        val resolved = encodeFcmResolvedPayload(toJson(question("q_gone", listOf(opt("a", "A"), opt("b", "B")), false) + mapOf("state" to "cancelled", "resolved_at" to "2026-06-27T10:40:00Z"))).data
        assertEquals(QuestionNotifier.Result.Kept("q_gone"), notifier.onDataMessage(resolved))
        assertNotNull(shadowOf(manager).getNotification("q_gone", androidNotificationId("q_gone")))
        assertEquals(QuestionState.PENDING, core.feed().single().state)

        val r = notifier.onDataMessage(mapOf("type" to "question", "qp" to "{broken", "title" to "Release Bot asks you", "body" to "Deploy?"))
        assertTrue(r is QuestionNotifier.Result.Fallback)
        val fallback = shadowOf(manager).getNotification(QuestionIntents.FALLBACK_TAG, 0)
        assertEquals("Release Bot asks you", fallback.extras.getString(Notification.EXTRA_TITLE))
        assertNotNull(fallback.contentIntent)
    }

    /** Issue 48, item 8: a resolution push the store cannot judge (closed
     *  here, as iOS closes it in the background) is the core's decision,
     *  the same as with no core at all: kept unconfirmed, never withdrawn. */
    @Test
    fun aResolutionPushTheStoreCannotJudgeIsKeptAsTheCoreDecides() {
        notifier.onDataMessage(encodeFcmPayload(toJson(question("q_shut", listOf(opt("a", "A"), opt("b", "B")), false))).data)
        posted("q_shut")
        val resolved = encodeFcmResolvedPayload(toJson(question("q_shut", listOf(opt("a", "A"), opt("b", "B")), false) +
            mapOf("state" to "cancelled", "resolved_at" to "2026-06-27T10:40:00Z"))).data
        core.suspend()
        try {
            assertEquals(ResolutionPushAction.KeepUnconfirmed,
                kotlinx.coroutines.runBlocking { core.resolutionPush("q_shut", phoneBudgets().extensionNetworkMs) })
            assertEquals(QuestionNotifier.Result.Kept("q_shut"), notifier.onDataMessage(resolved))
            assertNotNull("not withdrawn on a claim nobody checked", shadowOf(manager).getNotification("q_shut", androidNotificationId("q_shut")))
        } finally {
            core.resume()
        }
        // No core (its store or vault could not be opened): the core's rule for no store.
        assertEquals(ResolutionPushAction.KeepUnconfirmed, resolutionPushWithoutStore())
        val coreless = QuestionNotifier(context, null, TestReceiver::class.java, android.R.drawable.ic_dialog_info)
        assertEquals(QuestionNotifier.Result.Kept("q_shut"), coreless.onDataMessage(resolved))
        posted("q_shut")
    }

    @Test
    fun dangerActionsAskForTheUnlockWhereAndroidCan() {
        val locked = QuestionNotifier(context, core, TestReceiver::class.java, android.R.drawable.ic_dialog_info,
            requireUnlockForDanger = true)
        locked.onDataMessage(encodeFcmPayload(toJson(question("q_lock", listOf(opt("approve", "Approve", "primary"), opt("wipe", "Wipe", "danger")), false))).data)
        val n = posted("q_lock")
        assertEquals(listOf("Approve", "Wipe"), n.actions.map { it.title.toString() })
        if (android.os.Build.VERSION.SDK_INT >= 31) {
            assertTrue("the danger action asks for the unlock", n.actions[1].isAuthenticationRequired)
            assertTrue(!n.actions[0].isAuthenticationRequired)
        }
    }

    @Test
    fun notificationsTurnedOffAreReportedAndTheQuestionStaysInTheFeed() {
        shadowOf(manager).setNotificationsEnabled(false)
        assertTrue(!notifier.canNotify())
        val result = notifier.onDataMessage(encodeFcmPayload(toJson(question("q_quiet", listOf(opt("a", "A"), opt("b", "B")), false))).data)
        assertEquals(QuestionNotifier.Result.NotificationsBlocked("q_quiet"), result)
        assertNull(shadowOf(manager).getNotification("q_quiet", androidNotificationId("q_quiet")))
        assertEquals("q_quiet", core.feed().single().questionId)
    }

    /** POSTs JSON to the server android/run-tests started; the response body. */
    private fun post(url: String, path: String, token: String, body: String, status: Int): String {
        val request = java.net.http.HttpRequest.newBuilder(java.net.URI.create("$url$path"))
            .header("Authorization", "Bearer $token")
            .header("Content-Type", "application/json")
            .POST(java.net.http.HttpRequest.BodyPublishers.ofString(body))
            .build()
        val response = java.net.http.HttpClient.newHttpClient().send(request, java.net.http.HttpResponse.BodyHandlers.ofString())
        assertEquals(status, response.statusCode())
        return response.body()
    }

    /** Asks as the agent; the question JSON. */
    private fun askOnServer(url: String, prompt: String): String = post(url, "/api/agent/rooms/OPS123/questions",
        System.getenv("QP_E2E_AGENT_TOKEN"),
        """{"prompt": "$prompt", "options": [{"value": "approve", "label": "Approve", "style": "primary"}, {"value": "deny", "label": "Deny"}]}""", 201)

    /** Answers as the e2e user (from another of their devices). */
    private fun answerOnServer(url: String, id: String, value: String) {
        post(url, "/api/questions/$id/answer", System.getenv("QP_E2E_USER_TOKEN"), """{"value": "$value"}""", 200)
    }

    @Test
    fun aLockScreenAnswerIsDeliveredWithinTheReceiverAndTheNotificationSaysSo() {
        org.junit.Assume.assumeTrue("run through android/run-tests", System.getenv("QP_E2E_URL") != null)
        val url = System.getenv("QP_E2E_URL")
        val online = PhoneCore(File(dir, "online.sqlite").path, StoreMode.APP, url, System.getenv("QP_E2E_USER"),
            StaticToken(System.getenv("QP_E2E_USER_TOKEN")), listOf("en"))
        TestReceiver.core = online
        val onlineNotifier = QuestionNotifier(context, online, TestReceiver::class.java, android.R.drawable.ic_dialog_info)
        val posted = onlineNotifier.onDataMessage(encodeFcmPayload(askOnServer(url, "Restart the worker? (SDK ${android.os.Build.VERSION.SDK_INT})")).data)
        val id = (posted as QuestionNotifier.Result.Posted).questionId
        tap(posted(id), 0, null)
        assertEquals("delivered at once: nothing left for background work", 0, TestReceiver.flushes)
        assertEquals("You answered: Approve", posted(id).extras.getCharSequence(Notification.EXTRA_TEXT).toString())
        online.close()
    }

    /** Issue 32, finding 1: a resolution push withdraws the notification only
     *  once the server confirms it (a forged one, while the question is
     *  pending, changes nothing). */
    @Test
    fun aResolutionPushIsWithdrawnOnlyWhenTheServerConfirmsIt() {
        org.junit.Assume.assumeTrue("run through android/run-tests", System.getenv("QP_E2E_URL") != null)
        val url = System.getenv("QP_E2E_URL")
        val online = PhoneCore(File(dir, "confirm.sqlite").path, StoreMode.APP, url, System.getenv("QP_E2E_USER"),
            StaticToken(System.getenv("QP_E2E_USER_TOKEN")), listOf("en"))
        val onlineNotifier = QuestionNotifier(context, online, TestReceiver::class.java, android.R.drawable.ic_dialog_info)
        val asked = askOnServer(url, "Drain the node? (SDK ${android.os.Build.VERSION.SDK_INT})")
        val id = (onlineNotifier.onDataMessage(encodeFcmPayload(asked).data) as QuestionNotifier.Result.Posted).questionId
        val claim = encodeFcmResolvedPayload(toJson(obj(parse(asked)) + mapOf("state" to "cancelled",
            "resolved_at" to "2026-06-27T10:40:00Z"))).data
        try {
            assertEquals(QuestionNotifier.Result.Kept(id), onlineNotifier.onDataMessage(claim))
            assertNotNull("still pending on the server: kept", shadowOf(manager).getNotification(id, androidNotificationId(id)))
        } finally {
            answerOnServer(url, id, "deny") // also leaves the user nothing pending, as the other suites expect
        }
        assertEquals(QuestionNotifier.Result.Withdrawn(id), onlineNotifier.onDataMessage(claim))
        assertNull(shadowOf(manager).getNotification(id, androidNotificationId(id)))
        assertEquals(QuestionState.ANSWERED, online.feed().first { it.questionId == id }.state)
        online.close()
    }

    @Test
    fun reconciliationPostsWhatWasMissedAndWithdrawsWhatResolved() {
        org.junit.Assume.assumeTrue("run through android/run-tests", System.getenv("QP_E2E_URL") != null)
        val url = System.getenv("QP_E2E_URL")
        val online = PhoneCore(File(dir, "reconcile.sqlite").path, StoreMode.APP, url, System.getenv("QP_E2E_USER"),
            StaticToken(System.getenv("QP_E2E_USER_TOKEN")), listOf("en"))
        val onlineNotifier = QuestionNotifier(context, online, TestReceiver::class.java, android.R.drawable.ic_dialog_info)
        val sdk = android.os.Build.VERSION.SDK_INT
        // One push arrived; the other was never delivered (the app was force-stopped).
        val shown = (onlineNotifier.onDataMessage(encodeFcmPayload(askOnServer(url, "Promote the canary? ($sdk)")).data)
            as QuestionNotifier.Result.Posted).questionId
        val missedJson = askOnServer(url, "Scale the workers? ($sdk)")
        val missed = Regex("\"id\"\\s*:\\s*\"([^\"]+)\"").find(missedJson)!!.groupValues[1]
        // The shown one is answered elsewhere, and its resolution push is lost too.
        answerOnServer(url, shown, "deny")
        manager.notify("app.chat", 7, Notification.Builder(context, "other").setSmallIcon(android.R.drawable.ic_dialog_info).build())

        kotlinx.coroutines.runBlocking { online.sync() }
        val plan = onlineNotifier.reconcile()!!
        assertEquals(listOf(shown), plan.resolved.map { it.identifier })
        assertTrue(plan.post.any { it.id == missed })
        assertNull("resolved: withdrawn", shadowOf(manager).getNotification(shown, androidNotificationId(shown)))
        assertNotNull("missed: posted", shadowOf(manager).getNotification(missed, androidNotificationId(missed)))
        assertNotNull("not ours: left alone", shadowOf(manager).getNotification("app.chat", 7))
        // Dismissed by the person: not posted again at the next launch.
        manager.cancel(missed, androidNotificationId(missed))
        assertTrue(onlineNotifier.reconcile()!!.post.none { it.id == missed })
        online.close()
        answerOnServer(url, missed, "approve") // leaves the user nothing pending, as the other suites expect
    }

    /** Issue 26: the lifecycle through the core. Going to the background
     *  with an answer unsent schedules the background work; coming back
     *  sends it once, and withdraws a question answered on another phone
     *  (its resolution push lost) and the one just answered. */
    @Test
    fun theLifecycleSendsAQueuedAnswerOnceAndWithdrawsWhatWasAnsweredElsewhere() = kotlinx.coroutines.runBlocking {
        org.junit.Assume.assumeTrue("run through android/run-tests", System.getenv("QP_E2E_URL") != null)
        val url = System.getenv("QP_E2E_URL")
        val online = PhoneCore(File(dir, "lifecycle.sqlite").path, StoreMode.APP, url, System.getenv("QP_E2E_USER"),
            StaticToken(System.getenv("QP_E2E_USER_TOKEN")), listOf("en"))
        val n = QuestionNotifier(context, online, TestReceiver::class.java, android.R.drawable.ic_dialog_info)
        val sdk = android.os.Build.VERSION.SDK_INT
        fun show(prompt: String) = (n.onDataMessage(encodeFcmPayload(askOnServer(url, prompt)).data)
            as QuestionNotifier.Result.Posted).questionId
        val mine = show("Purge the queue? ($sdk)")
        val elsewhere = show("Rotate the logs? ($sdk)")
        // Answered here, not sent yet (as by the receiver while offline).
        online.answerAction(mine, "qp.v.approve", null)
        assertEquals("Approve: queued, will send when you’re online", online.answeredLine(mine))
        answerOnServer(url, elsewhere, "deny") // on the person's other phone
        var scheduled = 0
        val lifecycle = QuestionLifecycle(scheduleFlush = { scheduled++ }) { n }

        val background = lifecycle.onStop().await()!!
        assertEquals(1u, background.unsentAnswers)
        assertTrue("Android keeps the store open", !background.storeClosed)
        assertEquals("the unsent answer goes to background work", 1, scheduled)

        val first = lifecycle.onStart().await()
        assertTrue("${first.failures}", first.failures.isEmpty())
        assertEquals(1u, first.flushed!!.answered)
        assertEquals(setOf(mine, elsewhere), first.plan!!.resolved.map { it.identifier }.toSet())
        assertNull("answered elsewhere: withdrawn", shadowOf(manager).getNotification(elsewhere, androidNotificationId(elsewhere)))
        assertNull("answered here: withdrawn", shadowOf(manager).getNotification(mine, androidNotificationId(mine)))
        assertEquals("You answered: Approve", online.answeredLine(mine))
        assertNull(first.statusLine)
        val again = lifecycle.onStart().await()
        assertEquals("sent once", 0u, again.flushed!!.answered)
        assertEquals(0u, lifecycle.onStop().await()!!.unsentAnswers)
        assertEquals(1, scheduled)
        online.close()
    }

    /** An end-to-end encrypted FCM message (the pinned vector): posted with the
     *  real question and its actions; with another key, the generic words the
     *  message carries, never a crash. */
    @Test
    fun aSealedMessageIsPostedAndAnUnopenableOneFallsBack() {
        @Suppress("UNCHECKED_CAST")
        val sealed = vectors("e2e").first { it.second["name"] == "question_fcm" }.second
        @Suppress("UNCHECKED_CAST")
        val data = sealed["payload"] as Map<String, String>
        val key = java.util.Base64.getDecoder().decode(sealed["device_secret"] as String)
        val keyed = PhoneCore(File(dir, "sealed.sqlite").path, StoreMode.APP, "http://127.0.0.1:9", "u_federica",
            StaticToken(null), listOf("en"), MemoryKeyStore(key), "dev_vector")
        val n = QuestionNotifier(context, keyed, TestReceiver::class.java, android.R.drawable.ic_dialog_info)
        assertEquals(QuestionNotifier.Result.Posted("q_e2e_vector", androidNotificationId("q_e2e_vector")), n.onDataMessage(data))
        val shown = posted("q_e2e_vector")
        assertEquals("Rotate the production database password?", shown.extras.getCharSequence(Notification.EXTRA_TEXT).toString())
        assertEquals(3, shown.actions.size)
        keyed.close()

        val wrong = PhoneCore(File(dir, "wrong.sqlite").path, StoreMode.APP, "http://127.0.0.1:9", "u_federica",
            StaticToken(null), listOf("en"), MemoryKeyStore(ByteArray(32) { 0x52 }), "dev_vector")
        val result = QuestionNotifier(context, wrong, TestReceiver::class.java, android.R.drawable.ic_dialog_info).onDataMessage(data)
        assertTrue("$result", result is QuestionNotifier.Result.Fallback)
        val fallback = checkNotNull(shadowOf(manager).getNotification(QuestionIntents.FALLBACK_TAG, 0))
        assertEquals("New question", fallback.extras.getCharSequence(Notification.EXTRA_TITLE).toString())
        assertEquals("Open the app to answer.", fallback.extras.getCharSequence(Notification.EXTRA_TEXT).toString())
        wrong.close()

        // Issue 32, finding 1: with a key, a plain message (a forgery with
        // the real id and another prompt) is not trusted: the generic words,
        // never its own, and the real question stays as it was.
        val again = PhoneCore(File(dir, "sealed.sqlite").path, StoreMode.APP, "http://127.0.0.1:9", "u_federica",
            StaticToken(null), listOf("en"), MemoryKeyStore(key), "dev_vector")
        val forged = encodeFcmPayload(toJson(question("q_e2e_vector", listOf(opt("allow", "Allow"), opt("deny", "Deny")), false)
            + mapOf("prompt" to "Allow Bash: git status"))).data + mapOf("title" to "Release Bot asks you", "body" to "Allow Bash: git status")
        val refused = QuestionNotifier(context, again, TestReceiver::class.java, android.R.drawable.ic_dialog_info).onDataMessage(forged)
        assertTrue("$refused", refused is QuestionNotifier.Result.Fallback)
        val generic = checkNotNull(shadowOf(manager).getNotification(QuestionIntents.FALLBACK_TAG, 0))
        assertEquals("Open the app to answer.", generic.extras.getCharSequence(Notification.EXTRA_TEXT).toString())
        assertEquals("Rotate the production database password?", again.question("q_e2e_vector")!!.prompt)
        again.close()
    }

    /** Issue 48 (3): the receiver does no disk or Keystore work on the main
     *  thread: goAsync first, then the core (SQLite, the vault) is asked for
     *  on another thread only; the answer is committed there. */
    @Test
    fun theReceiverDoesNoStoreWorkOnTheMainThread() {
        notifier.onDataMessage(encodeFcmPayload(toJson(question("q_main", listOf(opt("approve", "Approve"), opt("deny", "Deny")), false))).data)
        val intent = Intent(shadowOf(posted("q_main").actions[0].actionIntent).savedIntent)
        ThreadedReceiver.core = { core }
        ThreadedReceiver.onMainThread.clear()
        val receiver = ThreadedReceiver()
        assertEquals("the test runs on the main thread", android.os.Looper.getMainLooper(), android.os.Looper.myLooper())
        receiver.onReceive(context, intent)
        val until = System.currentTimeMillis() + 10_000
        while (receiver.lastOutcome == null && System.currentTimeMillis() < until) Thread.sleep(20)
        assertTrue("${receiver.lastOutcome}", receiver.lastOutcome is QuestionAnswerReceiver.Outcome.Committed)
        assertTrue("the core was asked for", ThreadedReceiver.onMainThread.isNotEmpty())
        assertEquals("never on the main thread", listOf<Boolean>(), ThreadedReceiver.onMainThread.filter { it })
        assertEquals("qp.v.approve".removePrefix("qp.v."), core.answerStatus("q_main")?.let { "approve" })
    }

    /** Issue 48 (4): the app's vault or key store throwing (a Keystore that
     *  cannot decrypt after a restore) never crashes the receiver: reported,
     *  and the generic notification replaces the question's. */
    @Test
    fun aThrowingVaultInTheReceiverShowsTheGenericNotification() {
        notifier.onDataMessage(encodeFcmPayload(toJson(question("q_vault", listOf(opt("approve", "Approve"), opt("deny", "Deny")), false))).data)
        val intent = Intent(shadowOf(posted("q_vault").actions[0].actionIntent).savedIntent)
        ThreadedReceiver.core = { throw java.security.GeneralSecurityException("the Keystore cannot decrypt") }
        ThreadedReceiver.reported.clear()
        val receiver = ThreadedReceiver()
        receiver.onReceive(context, intent)
        val until = System.currentTimeMillis() + 10_000
        while (receiver.lastOutcome == null && System.currentTimeMillis() < until) Thread.sleep(20)
        assertTrue("${receiver.lastOutcome}", receiver.lastOutcome is QuestionAnswerReceiver.Outcome.NeedsApp)
        assertEquals(listOf("answer receiver: GeneralSecurityException"), ThreadedReceiver.reported.toList())
        val shown = posted("q_vault")
        assertEquals("New question", shown.extras.getCharSequence(Notification.EXTRA_TITLE).toString())
        assertEquals("no buttons: the app finishes it", 0, shown.actions?.size ?: 0)
        assertNotNull("a tap opens the app", shown.contentIntent)
    }

    /** Issue 48 (4): a key store that throws while a sealed message is opened
     *  (uniffi makes it an InternalException), and a core that cannot be
     *  opened at all: the messaging service shows the generic notification. */
    @Test
    fun aThrowingKeyStoreOrCoreInTheMessagingServiceShowsTheGenericNotification() {
        @Suppress("UNCHECKED_CAST")
        val sealed = vectors("e2e").first { it.second["name"] == "question_fcm" }.second
        @Suppress("UNCHECKED_CAST")
        val data = sealed["payload"] as Map<String, String>
        val keyed = PhoneCore(File(dir, "throwing.sqlite").path, StoreMode.APP, "http://127.0.0.1:9", "u_federica",
            StaticToken(null), listOf("en"), ThrowingKeyStore(), "dev_vector")
        val result = QuestionNotifier(context, keyed, TestReceiver::class.java, android.R.drawable.ic_dialog_info).onDataMessage(data)
        assertTrue("$result", result is QuestionNotifier.Result.Fallback)
        val generic = checkNotNull(shadowOf(manager).getNotification(QuestionIntents.FALLBACK_TAG, 0))
        assertEquals("New question", generic.extras.getCharSequence(Notification.EXTRA_TITLE).toString())
        keyed.close()

        manager.cancelAll()
        val none = QuestionNotifier.onMessageReceived(context, data, TestReceiver::class.java, android.R.drawable.ic_dialog_info) {
            throw IllegalStateException("the store cannot be opened")
        }
        assertTrue("$none", none is QuestionNotifier.Result.Fallback)
        assertEquals("Open the app to answer.", checkNotNull(shadowOf(manager).getNotification(QuestionIntents.FALLBACK_TAG, 0))
            .extras.getCharSequence(Notification.EXTRA_TEXT).toString())
    }

    /** Issue 48 (4): an Error, not an Exception, from the app's callbacks
     *  (a class its vault needs failing to initialize) never crashes the
     *  messaging service or the receiver: reported, the generic notification. */
    @Test
    fun anErrorFromTheAppsCallbackShowsTheGenericNotification() {
        val appError = { throw ExceptionInInitializerError("the app's vault class failed to initialize") }
        val shown = QuestionNotifier.onMessageReceived(context, mapOf("qp" to "{}"), TestReceiver::class.java,
            android.R.drawable.ic_dialog_info) { appError() }
        assertTrue("$shown", shown is QuestionNotifier.Result.Fallback)
        assertEquals("New question", checkNotNull(shadowOf(manager).getNotification(QuestionIntents.FALLBACK_TAG, 0))
            .extras.getCharSequence(Notification.EXTRA_TITLE).toString())

        notifier.onDataMessage(encodeFcmPayload(toJson(question("q_error", listOf(opt("approve", "Approve"), opt("deny", "Deny")), false))).data)
        val intent = Intent(shadowOf(posted("q_error").actions[0].actionIntent).savedIntent)
        ThreadedReceiver.core = { appError() }
        ThreadedReceiver.reported.clear()
        val receiver = ThreadedReceiver()
        receiver.onReceive(context, intent)
        val until = System.currentTimeMillis() + 10_000
        while (receiver.lastOutcome == null && System.currentTimeMillis() < until) Thread.sleep(20)
        assertTrue("${receiver.lastOutcome}", receiver.lastOutcome is QuestionAnswerReceiver.Outcome.NeedsApp)
        assertEquals(listOf("answer receiver: ExceptionInInitializerError"), ThreadedReceiver.reported.toList())
        assertEquals("New question", posted("q_error").extras.getCharSequence(Notification.EXTRA_TITLE).toString())
    }

    /** Issue 48 (4): the background job's body never throws: a core that
     *  cannot be opened is reported and the job retried; an empty outbox is done. */
    @Test
    fun theBackgroundFlushReportsInsteadOfThrowing() = kotlinx.coroutines.runBlocking {
        assertEquals(false, QuestionLifecycle.backgroundFlush { throw java.security.GeneralSecurityException("cannot decrypt") })
        assertEquals(false, QuestionLifecycle.backgroundFlush { throw NoClassDefFoundError("io/questionprotocol/core/UniffiLib") })
        assertEquals(true, QuestionLifecycle.backgroundFlush { core })
    }

    /** The app's onStart/onStop never crash the activity: a core that
     *  cannot be opened (the Keystore after a restore, the native library
     *  missing) is a failure in the result, reported. */
    @Test
    fun theLifecycleCallsReportACoreThatCannotBeOpenedInsteadOfThrowing() = kotlinx.coroutines.runBlocking {
        for (thrown in listOf<Throwable>(java.security.GeneralSecurityException("cannot decrypt"), UnsatisfiedLinkError("libqp_ffi.so"))) {
            var scheduled = 0
            val lifecycle = QuestionLifecycle(scheduleFlush = { scheduled++ }) { throw thrown }
            val started = lifecycle.onStart().await()
            assertEquals("$thrown", 1, started.failures.size)
            assertNull(started.flushed)
            assertNull(lifecycle.onStop().await())
            assertEquals(0, scheduled)
        }
    }

    /** Issue 48 (3): a resolution message with the server unreachable (it
     *  takes the connection and never answers) returns within the core's
     *  budget, the question kept: FCM gives onMessageReceived about 10 s. */
    @Test
    fun aResolutionMessageReturnsWithinTheBudgetWithTheServerUnreachable() {
        val silent = java.net.ServerSocket(0, 50, java.net.InetAddress.getByName("127.0.0.1"))
        val held = java.util.Collections.synchronizedList(mutableListOf<java.net.Socket>())
        val acceptor = Thread { try { while (true) held += silent.accept() } catch (e: java.io.IOException) {} }.apply { isDaemon = true; start() }
        val hanging = PhoneCore(File(dir, "hanging.sqlite").path, StoreMode.APP, "http://127.0.0.1:${silent.localPort}", "u_me",
            StaticToken("qpu_x"), listOf("en"))
        try {
            val n = QuestionNotifier(context, hanging, TestReceiver::class.java, android.R.drawable.ic_dialog_info)
            val q = question("q_hang", listOf(opt("approve", "Approve"), opt("deny", "Deny")), false)
            assertTrue(n.onDataMessage(encodeFcmPayload(toJson(q)).data) is QuestionNotifier.Result.Posted)
            val claim = encodeFcmResolvedPayload(toJson(q + mapOf("state" to "cancelled", "resolved_at" to "2026-06-27T10:40:00Z"))).data
            val started = System.nanoTime()
            val result = n.onDataMessage(claim)
            val tookMs = (System.nanoTime() - started) / 1_000_000
            assertEquals(QuestionNotifier.Result.Kept("q_hang"), result)
            val budget = phoneBudgets().extensionNetworkMs.toLong()
            assertTrue("took $tookMs ms (budget $budget ms, FCM ~10 s)", tookMs < budget + 2_000)
            assertNotNull("kept on screen", shadowOf(manager).getNotification("q_hang", androidNotificationId("q_hang")))
        } finally {
            hanging.close()
            // The acceptor stopped before the list is read: it added to the
            // list while the loop below iterated it once (SDK 31:
            // ConcurrentModificationException).
            silent.close()
            acceptor.join(1_000)
            synchronized(held) { held.toList() }.forEach { it.close() }
        }
    }
}
