// A minimal stand-in for the part of androidx.test:monitor that Robolectric
// calls while setting up its sandbox. androidx.test is published only on
// Google's Maven repository, which this machine cannot reach; Robolectric
// needs these classes to start, not for anything our tests check. The
// Android framework itself (Notification, RemoteInput, PendingIntent,
// BroadcastReceiver) is the real one from android-all-instrumented.
package androidx.test.internal.platform.util

object TestOutputEmitter {
    @JvmStatic fun dumpThreadStates(outputFileName: String) {}
}
