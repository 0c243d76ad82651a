// A minimal stand-in for the part of androidx.test:monitor that Robolectric
// calls while setting up its sandbox. androidx.test is published only on
// Google's Maven repository, which this machine cannot reach; Robolectric
// needs these classes to start, not for anything our tests check. The
// Android framework itself (Notification, RemoteInput, PendingIntent,
// BroadcastReceiver) is the real one from android-all-instrumented.
package androidx.test.platform.app

import android.app.Instrumentation
import android.os.Bundle

object InstrumentationRegistry {
    @Volatile private var instrumentation: Instrumentation? = null
    @Volatile private var arguments: Bundle = Bundle()

    @JvmStatic fun registerInstance(instrumentation: Instrumentation?, arguments: Bundle?) {
        this.instrumentation = instrumentation
        this.arguments = arguments ?: Bundle()
    }

    @JvmStatic fun getInstrumentation(): Instrumentation =
        instrumentation ?: throw IllegalStateException("No instrumentation registered")

    @JvmStatic fun getArguments(): Bundle = arguments
}
