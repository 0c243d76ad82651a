// A minimal stand-in for the part of androidx.test:monitor that Robolectric
// calls while setting up its sandbox. androidx.test is published only on
// Google's Maven repository, which this machine cannot reach; Robolectric
// needs these classes to start, not for anything our tests check. The
// Android framework itself (Notification, RemoteInput, PendingIntent,
// BroadcastReceiver) is the real one from android-all-instrumented.
package androidx.test.espresso

import android.os.Looper

interface IdlingResource {
    fun getName(): String
    fun isIdleNow(): Boolean
    fun registerIdleTransitionCallback(callback: ResourceCallback)

    fun interface ResourceCallback {
        fun onTransitionToIdle()
    }
}

class IdlingRegistry private constructor() {
    private val resources = java.util.concurrent.CopyOnWriteArraySet<IdlingResource>()
    private val loopers = java.util.concurrent.CopyOnWriteArraySet<Looper>()

    fun getResources(): Collection<IdlingResource> = resources.toList()
    fun getLoopers(): Collection<Looper> = loopers.toList()

    companion object {
        private val instance = IdlingRegistry()
        @JvmStatic fun getInstance(): IdlingRegistry = instance
    }
}
