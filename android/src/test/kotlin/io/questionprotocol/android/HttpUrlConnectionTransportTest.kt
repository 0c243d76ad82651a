// The glue's HttpURLConnection transport against the real `qp serve`
// started by android/run-tests, over HTTP and HTTPS: a response of any
// status comes back with its body, a dead server is a failure, the core's
// time limit is the connection's, trust is the platform's.
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
import java.io.File
import java.net.UnknownHostException
import java.security.KeyStore
import java.security.cert.CertificateFactory
import javax.net.ssl.HttpsURLConnection
import javax.net.ssl.SSLContext
import javax.net.ssl.TrustManagerFactory

/** A loopback server: each connection is handed to [reply] on a thread
 *  of its own. The base URL; stopped by [close]. */
internal class Loopback(private val reply: (java.net.Socket) -> Unit) : AutoCloseable {
    val requests = java.util.concurrent.atomic.AtomicInteger()
    private val socket = java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())
    val url = "http://127.0.0.1:${socket.localPort}"
    init {
        Thread {
            while (!socket.isClosed) {
                val client = try { socket.accept() } catch (e: java.io.IOException) { break }
                requests.incrementAndGet()
                Thread { client.use { c -> try { reply(c) } catch (e: java.io.IOException) { } } }.start()
            }
        }.apply { isDaemon = true }.start()
    }
    override fun close() = socket.close()
}

/** Reads a request's head (up to the blank line). */
internal fun readHead(c: java.net.Socket) {
    val r = c.getInputStream().bufferedReader()
    while (r.readLine()?.isNotEmpty() == true) Unit
}

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

    /** HTTPS to the real `qp serve` (android/run-tests starts it with a
     *  certificate from a throwaway CA, `qp admin tls dev-cert`). The CA is
     *  trusted outside the library, through the JVM-wide default
     *  (`HttpsURLConnection.setDefaultSSLSocketFactory`): a stand-in for an
     *  app's network security config or a CA an MDM installed, which cannot
     *  exist under Robolectric. What it shows: the transport adds no trust
     *  manager of its own and takes the process's; that Android's config
     *  reaches `HttpURLConnection` is the framework's, unverified here. */
    @Test
    fun httpsWorksWithACaThePlatformTrusts() = runBlocking {
        assumeTrue("run through android/run-tests", System.getenv("QP_E2E_TLS_URL") != null)
        val url = env("QP_E2E_TLS_URL") + "/api/questions/pending"
        assertTrue(url, url.startsWith("https://127.0.0.1:"))
        val before = HttpsURLConnection.getDefaultSSLSocketFactory()
        HttpsURLConnection.setDefaultSSLSocketFactory(trusting(File(env("QP_E2E_TLS_CA"))).socketFactory)
        try {
            val ok = HttpUrlConnectionTransport().send(request(HttpMethod.GET, url, env("QP_E2E_TLS_USER_TOKEN")))
            assertEquals(200, ok.status.toInt())
            assertTrue(String(ok.body).contains("\"questions\""))
        } finally {
            HttpsURLConnection.setDefaultSSLSocketFactory(before)
        }
    }

    /** The same server with its CA not trusted (the JVM's own roots only):
     *  a failure that names TLS, at once, not a hang until the time limit. */
    @Test
    fun anUntrustedCaIsAClearFailureNotAHang() = runBlocking {
        assumeTrue("run through android/run-tests", System.getenv("QP_E2E_TLS_URL") != null)
        val started = System.nanoTime()
        try {
            HttpUrlConnectionTransport().send(request(HttpMethod.GET, env("QP_E2E_TLS_URL") + "/api/questions/pending",
                env("QP_E2E_TLS_USER_TOKEN"), timeoutMs = 10_000u))
            fail("a server whose CA is not trusted answered")
        } catch (e: HttpException.Unreachable) {
            assertTrue(e.reason, e.reason.startsWith("TLS handshake failed"))
            assertTrue(e.reason, e.reason.contains("certification path") || e.reason.contains("PKIX"))
        }
        val tookMs = (System.nanoTime() - started) / 1_000_000
        assertTrue("took $tookMs ms of a 10 s limit", tookMs < 5_000)
    }

    /** An SSLContext whose trust is [ca] (PEM) alone. */
    private fun trusting(ca: File): SSLContext {
        val cert = ca.inputStream().use { CertificateFactory.getInstance("X.509").generateCertificate(it) }
        val store = KeyStore.getInstance(KeyStore.getDefaultType()).apply {
            load(null, null)
            setCertificateEntry("qp-dev-ca", cert)
        }
        val trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm()).apply { init(store) }
        return SSLContext.getInstance("TLS").apply { init(null, trust.trustManagers, null) }
    }

    @Test
    fun failuresAreNamedAsTheCoreReadsThem() {
        assertTrue(HttpUrlConnectionTransport.failure(SocketTimeoutException("Read timed out")) is HttpException.TimedOut)
        assertTrue(HttpUrlConnectionTransport.failure(UnknownHostException("qp.example")) is HttpException.Offline)
        assertTrue(HttpUrlConnectionTransport.failure(java.net.ConnectException("refused")) is HttpException.Unreachable)
        val tls = HttpUrlConnectionTransport.failure(javax.net.ssl.SSLHandshakeException("PKIX path building failed"))
        assertTrue(tls is HttpException.Unreachable && tls.reason.startsWith("TLS handshake failed"))
        assertEquals("DELETE", HttpUrlConnectionTransport.method(HttpMethod.DELETE))
    }

    /** Sends [text] a byte at a time, [gapMs] apart: each read gets a byte
     *  well inside its own timeout, the exchange as a whole takes long. */
    private fun trickle(c: java.net.Socket, text: String, gapMs: Long) {
        val out = c.getOutputStream()
        for (b in text.toByteArray()) { out.write(b.toInt()); out.flush(); Thread.sleep(gapMs) }
    }

    private fun assertCutAtTheLimit(url: String, limitMs: Long) = runBlocking {
        val started = System.nanoTime()
        try {
            val r = HttpUrlConnectionTransport().send(request(HttpMethod.GET, url, null, timeoutMs = limitMs.toUInt()))
            fail("answered ${r.status} after ${(System.nanoTime() - started) / 1_000_000} ms of a $limitMs ms limit")
        } catch (e: HttpException.TimedOut) {
            // the core records it as a timeout and retries later
        }
        val tookMs = (System.nanoTime() - started) / 1_000_000
        assertTrue("took $tookMs ms of a $limitMs ms limit", tookMs < limitMs + 700)
    }

    /** Issue 47: the core's limit is the whole exchange's. HttpURLConnection's
     *  timeouts are per step (each read waits up to its own), so a server
     *  sending its head a byte at a time held a request for seconds past the
     *  limit (before the fix: 200 after ~7.8 s of an 800 ms limit). */
    @Test
    fun aServerTricklingItsHeadIsCutAtTheCoresLimit() = Loopback { c ->
        readHead(c)
        trickle(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", 200)
    }.use { assertCutAtTheLimit(it.url + "/api/questions/pending", 800) }

    /** The same with the head at once and the body a byte at a time. */
    @Test
    fun aServerTricklingItsBodyIsCutAtTheCoresLimit() = Loopback { c ->
        readHead(c)
        val body = "{\"questions\": []}"
        c.getOutputStream().write("HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n".toByteArray())
        trickle(c, body, 200)
    }.use { assertCutAtTheLimit(it.url + "/api/questions/pending", 800) }

    /** Issue 47: never followed (a captive portal, a moved server): the 3xx
     *  reaches the core, which reports it naming the status
     *  (core `phone::tests::a_redirect_is_not_followed_and_is_reported_with_its_status`). */
    @Test
    fun aRedirectIsAResponseNotFollowed() = Loopback { c ->
        readHead(c)
        val port = c.localPort
        c.getOutputStream().write(("HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:$port/elsewhere\r\n" +
            "Content-Length: 0\r\nConnection: close\r\n\r\n").toByteArray())
    }.use { server ->
        val r = runBlocking { HttpUrlConnectionTransport().send(request(HttpMethod.GET, server.url + "/api/questions/pending", null)) }
        assertEquals(302, r.status.toInt())
        Thread.sleep(200)
        assertEquals("the Location was not asked", 1, server.requests.get())
    }
}
