// Issue 48 (4): the native library cannot be loaded (an install without the
// .so for the phone's ABI, a corrupted one). android/pom.xml runs this class
// alone, in a JVM of its own whose bindings are pointed at a library file
// that does not exist, so every call into the core throws
// UnsatisfiedLinkError (then NoClassDefFoundError), as on such a phone.
// Every entry point the system calls shows the generic notification (its
// words generated at build time from the core's copy) instead of crashing.
package io.questionprotocol.android

import android.app.Notification
import android.app.NotificationManager
import android.content.Context
import android.content.Intent
import android.os.LocaleList
import io.questionprotocol.core.PhoneCore
import io.questionprotocol.core.StoreMode
import io.questionprotocol.core.negotiatedLanguage
import kotlinx.coroutines.runBlocking
import org.junit.After
import org.junit.Assert.assertEquals
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

/** A receiver as an app writes it; its work inline for the test. */
class NoLibraryReceiver : QuestionAnswerReceiver() {
    companion object {
        val reported = java.util.Collections.synchronizedList(mutableListOf<String>())
    }
    lateinit var store: String
    override fun core(context: Context): PhoneCore =
        PhoneCore(store, StoreMode.APP, "http://127.0.0.1:9", "u_me", StaticNoToken, listOf("en"))
    override fun scheduleFlush(context: Context) {}
    override val smallIcon: Int = android.R.drawable.ic_dialog_info
    override fun runInBackground(work: () -> Unit) = work()
    override fun openApp(context: Context, questionId: String): Intent =
        Intent(Intent.ACTION_VIEW).putExtra("question", questionId)
    override fun reportFailure(site: String, error: Throwable) {
        reported += "$site: ${error.javaClass.simpleName}"
        super.reportFailure(site, error)
    }
}

object StaticNoToken : io.questionprotocol.core.TokenProvider {
    override fun token(): String? = null
}

@RunWith(RobolectricTestRunner::class)
class WithoutNativeLibraryTest {
    private lateinit var context: Context
    private lateinit var dir: File
    private val manager get() = checkNotNull(context.getSystemService(NotificationManager::class.java))
    private val icon = android.R.drawable.ic_dialog_info
    private val message = mapOf("qp" to "{}", "qp_question_id" to "q_1")

    @Before
    fun setUp() {
        context = RuntimeEnvironment.getApplication()
        dir = Files.createTempDirectory("qp-no-native").toFile()
        LocaleList.setDefault(LocaleList.forLanguageTags("en-US"))
    }

    @After
    fun tearDown() { dir.deleteRecursively() }

    private fun openCore(): PhoneCore =
        PhoneCore(File(dir, "phone.sqlite").path, StoreMode.APP, "http://127.0.0.1:9", "u_me", StaticNoToken, listOf("en"))

    private fun generic(): Notification = checkNotNull(shadowOf(manager).getNotification(QuestionIntents.FALLBACK_TAG, 0)) {
        "no generic notification"
    }

    @Test
    fun theNativeLibraryReallyCannotBeLoadedHere() {
        val e = runCatching { negotiatedLanguage(listOf("en")) }.exceptionOrNull()
        assertTrue("calling the core must fail to link, got $e", e is LinkageError)
    }

    @Test
    fun anFcmMessageShowsTheGenericNotificationInsteadOfCrashing() {
        val result = QuestionNotifier.onMessageReceived(context, message, NoLibraryReceiver::class.java, icon) { openCore() }
        assertTrue("$result", result is QuestionNotifier.Result.Fallback)
        val shown = generic()
        assertEquals("New question", shown.extras.getCharSequence(Notification.EXTRA_TITLE).toString())
        assertEquals("Open the app to answer.", shown.extras.getCharSequence(Notification.EXTRA_TEXT).toString())
        // The core's channel, named in the core's words.
        val channel = checkNotNull(manager.getNotificationChannel(shown.channelId))
        assertEquals("qp.questions", channel.id)
        assertEquals("Questions", channel.name.toString())
        assertEquals(NotificationManager.IMPORTANCE_HIGH, channel.importance)
    }

    @Test
    fun theGenericNotificationIsInThePersonsLanguage() {
        LocaleList.setDefault(LocaleList.forLanguageTags("de-AT,en"))
        QuestionNotifier.onMessageReceived(context, message, NoLibraryReceiver::class.java, icon) { openCore() }
        val german = checkNotNull(GenericNotificationCopy.LINES["de"])
        assertTrue("German is not English", german.title != "New question")
        assertEquals(german.title, generic().extras.getCharSequence(Notification.EXTRA_TITLE).toString())

        manager.cancelAll()
        LocaleList.setDefault(LocaleList.forLanguageTags("zh-CN"))
        QuestionNotifier.onMessageReceived(context, message, NoLibraryReceiver::class.java, icon) { openCore() }
        assertEquals(GenericNotificationCopy.LINES["zh-Hans"]!!.title, generic().extras.getCharSequence(Notification.EXTRA_TITLE).toString())

        manager.cancelAll()
        LocaleList.setDefault(LocaleList.forLanguageTags("pt-PT,fr"))
        QuestionNotifier.onMessageReceived(context, message, NoLibraryReceiver::class.java, icon) { openCore() }
        assertEquals(GenericNotificationCopy.LINES["pt-BR"]!!.title, generic().extras.getCharSequence(Notification.EXTRA_TITLE).toString())

        manager.cancelAll()
        LocaleList.setDefault(LocaleList.forLanguageTags("zh-TW,xx"))
        QuestionNotifier.onMessageReceived(context, message, NoLibraryReceiver::class.java, icon) { openCore() }
        assertEquals("no Traditional Chinese bundled: English", "New question",
            generic().extras.getCharSequence(Notification.EXTRA_TITLE).toString())
    }

    @Test
    fun aTappedAnswerReplacesTheQuestionWithTheGenericNotificationInsteadOfCrashing() {
        // The question's notification, posted while the library still loaded.
        val onScreen = Notification.Builder(context, "qp.questions").setSmallIcon(icon).setContentTitle("Deploy?").build()
        manager.notify("q_1", 4242, onScreen)
        val receiver = NoLibraryReceiver().apply { store = File(dir, "phone.sqlite").path }
        NoLibraryReceiver.reported.clear()
        receiver.onReceive(context, Intent(QuestionIntents.ACTION_ANSWER)
            .putExtra(QuestionIntents.EXTRA_QUESTION_ID, "q_1")
            .putExtra(QuestionIntents.EXTRA_ACTION_ID, "qp.v.approve"))
        assertTrue("${receiver.lastOutcome}", receiver.lastOutcome is QuestionAnswerReceiver.Outcome.NeedsApp)
        assertEquals(1, NoLibraryReceiver.reported.size)
        assertTrue(NoLibraryReceiver.reported[0], NoLibraryReceiver.reported[0].startsWith("answer receiver: "))
        val shown = checkNotNull(shadowOf(manager).getNotification("q_1", 4242)) { "the question's slot" }
        assertEquals("New question", shown.extras.getCharSequence(Notification.EXTRA_TITLE).toString())
        assertEquals("no buttons: the app finishes it", 0, shown.actions?.size ?: 0)
    }

    @Test
    fun theRetryJobIsRescheduledInsteadOfCrashing() {
        QuestionFlushJob.phone = { openCore() }
        try {
            val service = Robolectric.setupService(QuestionFlushJob::class.java)
            assertTrue(service.onStartJob(null))
            runBlocking { service.running!!.join() }
            val shadow = shadowOf(service)
            assertTrue("finished", shadow.isJobFinished)
            assertTrue("to run again", shadow.isRescheduleNeeded)
        } finally {
            QuestionFlushJob.phone = null
        }
    }
}
