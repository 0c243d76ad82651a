import android.content.Intent
import io.questionprotocol.android.QuestionIntents
import io.questionprotocol.android.deviceLanguages
import org.junit.Assert.assertEquals
import org.junit.Assert.assertTrue
import org.junit.Test
import org.junit.runner.RunWith
import org.robolectric.RobolectricTestRunner

/**
 * The released artifact, taken by coordinate (android/check-consumer makes
 * sure Maven resolved it from the release's repository), works in an app's
 * build: its Android glue runs on the Android framework (Robolectric's).
 */
@RunWith(RobolectricTestRunner::class)
class ConsumerTest {
    @Test
    fun theGlueFromTheArtifactRunsOnAndroid() {
        val tapped = Intent().putExtra(QuestionIntents.EXTRA_QUESTION_ID, "q_consumer")
        assertEquals("q_consumer", QuestionIntents.questionToOpen(tapped))
        assertTrue("the device's languages", deviceLanguages().isNotEmpty())
    }
}
