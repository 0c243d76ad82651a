// The glue's HttpURLConnection transport against the real `qp serve`
// started by android/run-tests: a response of any status comes back with
// its body, a dead server is a failure, the core's time limit is the
// connection's.
package io.questionprotocol.android

import io.questionprotocol.core.HttpException
import io.questionprotocol.core.HttpHeader
import io.questionprotocol.core.HttpMethod
import io.questionprotocol.core.HttpRequest
import kotlinx.coroutines.runBlocking
import org.junit.Assert.assertEquals
import org.junit.Assert.assertTrue
import org.junit.Assert.fail
import org.junit.Assume.assumeTrue
import org.junit.Test
import java.net.SocketTimeoutException
import java.net.UnknownHostException

class HttpUrlConnectionTransportTest {
    private fun env(k: String): String = System.getenv(k)!!

    private fun request(method: HttpMethod, url: String, token: String?, timeoutMs: UInt = 5000u) = HttpRequest(
        method, url,
        listOfNotNull(HttpHeader("Accept", "application/json"), token?.let { HttpHeader("Authorization", "Bearer $it") }),
        null, timeoutMs,
    )

    @Test
    fun everyStatusIsAResponseWithItsBody() = runBlocking {
        assumeTrue("run through android/run-tests", System.getenv("QP_E2E_URL") != null)
        val t = HttpUrlConnectionTransport()
        val ok = t.send(request(HttpMethod.GET, env("QP_E2E_URL") + "/api/questions/pending", env("QP_E2E_USER_TOKEN")))
        assertEquals(200, ok.status.toInt())
        assertTrue(String(ok.body).contains("\"questions\""))
        // A refused token is a response for the core to read, not a failure.
        val refused = t.send(request(HttpMethod.GET, env("QP_E2E_URL") + "/api/questions/pending", "qpu_not_a_token"))
        assertEquals(401, refused.status.toInt())
        assertTrue(String(refused.body).contains("error"))
    }

    @Test
    fun aDeadServerIsAFailureNotAResponse() = runBlocking {
        assumeTrue("run through android/run-tests", System.getenv("QP_E2E_URL") != null)
        try {
            HttpUrlConnectionTransport().send(request(HttpMethod.GET, env("QP_E2E_DEAD_URL") + "/healthz", null))
            fail("a dead server answered")
        } catch (e: HttpException.Unreachable) {
            // refused: the core queues the answer and retries
        }
    }

    @Test
    fun failuresAreNamedAsTheCoreReadsThem() {
        assertTrue(HttpUrlConnectionTransport.failure(SocketTimeoutException("Read timed out")) is HttpException.TimedOut)
        assertTrue(HttpUrlConnectionTransport.failure(UnknownHostException("qp.example")) is HttpException.Offline)
        assertTrue(HttpUrlConnectionTransport.failure(java.net.ConnectException("refused")) is HttpException.Unreachable)
        assertEquals("DELETE", HttpUrlConnectionTransport.method(HttpMethod.DELETE))
    }
}
