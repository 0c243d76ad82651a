// The adoption guide's OkHttp transport against the real `qp serve` started
// by android/run-tests, and loopback servers: what the core needs of any
// transport (every status a response, failures named, a redirect not
// followed, the core's limit for the whole call).
package io.questionprotocol.snippets

import io.questionprotocol.android.Loopback
import io.questionprotocol.android.readHead
import io.questionprotocol.core.HttpException
import io.questionprotocol.core.HttpHeader
import io.questionprotocol.core.HttpMethod
import io.questionprotocol.core.HttpRequest
import kotlinx.coroutines.runBlocking
import okhttp3.OkHttpClient
import org.junit.Assert.assertEquals
import org.junit.Assert.assertTrue
import org.junit.Assert.fail
import org.junit.Assume.assumeTrue
import org.junit.Test

class OkHttpTransportTest {
    private val transport = OkHttpTransport(OkHttpClient())

    private fun get(url: String, token: String? = null, timeoutMs: UInt = 5000u) = runBlocking {
        transport.send(HttpRequest(HttpMethod.GET, url, listOfNotNull(token?.let { HttpHeader("Authorization", "Bearer $it") }),
            null, timeoutMs))
    }

    @Test
    fun theRealServerAnswersThroughIt() {
        assumeTrue("run through android/run-tests", System.getenv("QP_E2E_URL") != null)
        val url = System.getenv("QP_E2E_URL") + "/api/questions/pending"
        val ok = get(url, System.getenv("QP_E2E_USER_TOKEN"))
        assertEquals(200, ok.status.toInt())
        assertTrue(String(ok.body).contains("\"questions\""))
        assertEquals("a refused token is a response", 401, get(url, "qpu_not_a_token").status.toInt())
        try {
            get(System.getenv("QP_E2E_DEAD_URL") + "/healthz")
            fail("a dead server answered")
        } catch (e: HttpException.Unreachable) {
        }
    }

    @Test
    fun aRedirectIsAResponseAndASlowServerIsCutAtTheLimit() {
        Loopback { c ->
            readHead(c)
            c.getOutputStream().write(("HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:${c.localPort}/elsewhere\r\n" +
                "Content-Length: 0\r\nConnection: close\r\n\r\n").toByteArray())
        }.use { server ->
            assertEquals(307, get(server.url + "/api/questions/pending").status.toInt())
            Thread.sleep(200)
            assertEquals("the Location was not asked", 1, server.requests.get())
        }
        Loopback { c ->
            readHead(c)
            val out = c.getOutputStream()
            for (b in "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}".toByteArray()) { out.write(b.toInt()); out.flush(); Thread.sleep(200) }
        }.use { server ->
            val started = System.nanoTime()
            try {
                get(server.url + "/api/questions/pending", timeoutMs = 800u)
                fail("a server sending a byte every 200 ms answered within 800 ms")
            } catch (e: HttpException.TimedOut) {
            }
            val tookMs = (System.nanoTime() - started) / 1_000_000
            assertTrue("took $tookMs ms of 800", tookMs < 1500)
        }
    }
}
