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
     *  trusted the platform's way, the process's default for every
     *  HttpsURLConnection (an app's network security config on Android),
     *  never by a trust manager of the library's. */
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
}
