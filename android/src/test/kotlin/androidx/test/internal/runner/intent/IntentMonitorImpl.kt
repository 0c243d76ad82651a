// A minimal stand-in for the part of androidx.test:monitor that Robolectric
// calls while setting up its sandbox. androidx.test is published only on
// Google's Maven repository, which this machine cannot reach; Robolectric
// needs these classes to start, not for anything our tests check. The
// Android framework itself (Notification, RemoteInput, PendingIntent,
// BroadcastReceiver) is the real one from android-all-instrumented.
package androidx.test.internal.runner.intent

import android.content.Intent
import androidx.test.runner.intent.IntentCallback
import androidx.test.runner.intent.IntentMonitor
import java.util.concurrent.CopyOnWriteArrayList

class IntentMonitorImpl : IntentMonitor {
    private val callbacks = CopyOnWriteArrayList<IntentCallback>()
    override fun addIntentCallback(callback: IntentCallback) { callbacks.add(callback) }
    override fun removeIntentCallback(callback: IntentCallback) { callbacks.remove(callback) }
    fun signalIntent(intent: Intent) { for (c in callbacks) c.onIntentSent(Intent(intent)) }
}
