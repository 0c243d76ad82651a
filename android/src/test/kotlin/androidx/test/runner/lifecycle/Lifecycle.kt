// A minimal stand-in for the part of androidx.test:monitor that Robolectric
// calls while setting up its sandbox. androidx.test is published only on
// Google's Maven repository, which this machine cannot reach; Robolectric
// needs these classes to start, not for anything our tests check. The
// Android framework itself (Notification, RemoteInput, PendingIntent,
// BroadcastReceiver) is the real one from android-all-instrumented.
package androidx.test.runner.lifecycle

import android.app.Activity
import android.app.Application

enum class Stage { PRE_ON_CREATE, CREATED, STARTED, RESUMED, PAUSED, STOPPED, RESTARTED, DESTROYED }

enum class ApplicationStage { PRE_ON_CREATE, CREATED }

fun interface ActivityLifecycleCallback {
    fun onActivityLifecycleChanged(activity: Activity, stage: Stage)
}

fun interface ApplicationLifecycleCallback {
    fun onApplicationLifecycleChanged(app: Application, stage: ApplicationStage)
}

interface ActivityLifecycleMonitor {
    fun addLifecycleCallback(callback: ActivityLifecycleCallback)
    fun removeLifecycleCallback(callback: ActivityLifecycleCallback)
    fun getLifecycleStageOf(activity: Activity): Stage
    fun getActivitiesInStage(stage: Stage): Collection<Activity>
}

interface ApplicationLifecycleMonitor {
    fun addLifecycleCallback(callback: ApplicationLifecycleCallback)
    fun removeLifecycleCallback(callback: ApplicationLifecycleCallback)
}

object ActivityLifecycleMonitorRegistry {
    @Volatile private var monitor: ActivityLifecycleMonitor? = null
    @JvmStatic fun getInstance(): ActivityLifecycleMonitor =
        monitor ?: throw IllegalStateException("No lifecycle monitor registered")
    @JvmStatic fun registerInstance(m: ActivityLifecycleMonitor?) { monitor = m }
}

object ApplicationLifecycleMonitorRegistry {
    @Volatile private var monitor: ApplicationLifecycleMonitor? = null
    @JvmStatic fun getInstance(): ApplicationLifecycleMonitor =
        monitor ?: throw IllegalStateException("No application monitor registered")
    @JvmStatic fun registerInstance(m: ApplicationLifecycleMonitor?) { monitor = m }
}
