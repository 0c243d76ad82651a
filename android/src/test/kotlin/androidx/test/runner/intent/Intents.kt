// A minimal stand-in for the part of androidx.test:monitor that Robolectric
// calls while setting up its sandbox. androidx.test is published only on
// Google's Maven repository, which this machine cannot reach; Robolectric
// needs these classes to start, not for anything our tests check. The
// Android framework itself (Notification, RemoteInput, PendingIntent,
// BroadcastReceiver) is the real one from android-all-instrumented.
package androidx.test.runner.intent

import android.app.Instrumentation
import android.content.Intent

fun interface IntentCallback {
    fun onIntentSent(intent: Intent)
}

interface IntentMonitor {
    fun addIntentCallback(callback: IntentCallback)
    fun removeIntentCallback(callback: IntentCallback)
}

fun interface IntentStubber {
    fun getActivityResultForIntent(intent: Intent): Instrumentation.ActivityResult?
}

object IntentMonitorRegistry {
    @Volatile private var monitor: IntentMonitor? = null
    @JvmStatic fun getInstance(): IntentMonitor = monitor ?: throw IllegalStateException("No intent monitor registered")
    @JvmStatic fun registerInstance(m: IntentMonitor?) { monitor = m }
}

object IntentStubberRegistry {
    @Volatile private var stubber: IntentStubber? = null
    @JvmStatic fun isLoaded(): Boolean = stubber != null
    @JvmStatic fun getInstance(): IntentStubber = stubber ?: throw IllegalStateException("No intent stubber loaded")
    @JvmStatic fun load(s: IntentStubber) { stubber = s }
    @JvmStatic fun reset() { stubber = null }
}
