// A minimal stand-in for the part of androidx.test:monitor that Robolectric
// calls while setting up its sandbox. androidx.test is published only on
// Google's Maven repository, which this machine cannot reach; Robolectric
// needs these classes to start, not for anything our tests check. The
// Android framework itself (Notification, RemoteInput, PendingIntent,
// BroadcastReceiver) is the real one from android-all-instrumented.
package androidx.test.internal.runner.lifecycle

import android.app.Activity
import android.app.Application
import androidx.test.runner.lifecycle.ActivityLifecycleCallback
import androidx.test.runner.lifecycle.ActivityLifecycleMonitor
import androidx.test.runner.lifecycle.ApplicationLifecycleCallback
import androidx.test.runner.lifecycle.ApplicationLifecycleMonitor
import androidx.test.runner.lifecycle.ApplicationStage
import androidx.test.runner.lifecycle.Stage
import java.util.concurrent.CopyOnWriteArrayList

class ActivityLifecycleMonitorImpl @JvmOverloads constructor(private val declawThreadCheck: Boolean = false) : ActivityLifecycleMonitor {
    private val callbacks = CopyOnWriteArrayList<ActivityLifecycleCallback>()
    private val stages = java.util.WeakHashMap<Activity, Stage>()

    override fun addLifecycleCallback(callback: ActivityLifecycleCallback) { callbacks.add(callback) }
    override fun removeLifecycleCallback(callback: ActivityLifecycleCallback) { callbacks.remove(callback) }
    override fun getLifecycleStageOf(activity: Activity): Stage =
        synchronized(stages) { stages[activity] } ?: throw IllegalArgumentException("Unknown activity")
    override fun getActivitiesInStage(stage: Stage): Collection<Activity> =
        synchronized(stages) { stages.filterValues { it == stage }.keys.toList() }

    fun signalLifecycleChange(stage: Stage, activity: Activity) {
        synchronized(stages) { stages[activity] = stage }
        for (c in callbacks) c.onActivityLifecycleChanged(activity, stage)
    }
}

class ApplicationLifecycleMonitorImpl : ApplicationLifecycleMonitor {
    private val callbacks = CopyOnWriteArrayList<ApplicationLifecycleCallback>()
    override fun addLifecycleCallback(callback: ApplicationLifecycleCallback) { callbacks.add(callback) }
    override fun removeLifecycleCallback(callback: ApplicationLifecycleCallback) { callbacks.remove(callback) }
    fun signalLifecycleChange(app: Application, stage: ApplicationStage) {
        for (c in callbacks) c.onApplicationLifecycleChanged(app, stage)
    }
}
