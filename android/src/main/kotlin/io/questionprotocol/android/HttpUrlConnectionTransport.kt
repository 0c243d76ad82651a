package io.questionprotocol.android

import io.questionprotocol.core.HttpException
import io.questionprotocol.core.HttpMethod
import io.questionprotocol.core.HttpRequest
import io.questionprotocol.core.HttpResponse
import io.questionprotocol.core.HttpTransport
import io.questionprotocol.core.setHttpTransport
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.withContext
import java.io.IOException
import java.net.HttpURLConnection
import java.net.SocketTimeoutException
import java.net.URL
import java.net.UnknownHostException
import java.util.concurrent.ScheduledThreadPoolExecutor
import java.util.concurrent.TimeUnit
import javax.net.ssl.SSLException
import javax.net.ssl.SSLHandshakeException

/**
 * Executes the phone core's requests with the framework's `HttpURLConnection`,
 * so what the platform applies to the app's traffic applies here: the app's
 * network security config (user and MDM-installed CAs, pinning), the system
 * proxy and a VPN. No dependency beyond the framework. The core describes each
 * request (method, URL, headers, body, its time limit); retries, idempotency
 * keys and what a status means stay in the core.
 *
 * Register one per process before the first network call:
 * `HttpUrlConnectionTransport.install()`. An app that already has OkHttp or
 * Ktor can register its own [HttpTransport] instead.
 */
class HttpUrlConnectionTransport : HttpTransport {
    override suspend fun send(request: HttpRequest): HttpResponse = withContext(Dispatchers.IO) {
        // The core's limit is for the whole exchange: connecting, sending,
        // and reading to the last byte. HttpURLConnection's own timeouts are
        // per step (connecting, then each read), so a slow server could hold
        // a request for several limits: connecting gets the budget, reading
        // what remains of it, and the deadline closes the connection.
        val limitMs = request.timeoutMs.toLong().coerceAtLeast(1)
        val deadline = System.nanoTime() + limitMs * 1_000_000
        val connection = try {
            URL(request.url).openConnection() as HttpURLConnection
        } catch (e: IOException) {
            throw failure(e)
        }
        val expiry = Deadline(connection, limitMs)
        try {
            connection.connectTimeout = millis(limitMs)
            connection.readTimeout = millis(limitMs) // until connected: then what remains
            connection.requestMethod = method(request.method)
            // Never followed: a redirect (a captive portal, a moved server)
            // reaches the core as the 3xx it is, and the core says so.
            connection.instanceFollowRedirects = false
            connection.useCaches = false
            for (h in request.headers) connection.setRequestProperty(h.name, h.value)
            val body = request.body
            if (body != null) {
                connection.doOutput = true
                connection.setFixedLengthStreamingMode(body.size)
            }
            connection.connect()
            // Each read waits at most what remains (where the platform
            // applies it once connected; the deadline bounds it anyway).
            connection.readTimeout = millis(remainingMs(deadline, limitMs))
            if (body != null) connection.outputStream.use { it.write(body) }
            val status = connection.responseCode
            // 4xx and 5xx come on the error stream; either is a response.
            val stream = if (status >= 400) connection.errorStream else connection.inputStream
            val bytes = stream?.use { readWithin(it, deadline, limitMs) } ?: ByteArray(0)
            HttpResponse(status.toUShort(), bytes)
        } catch (e: IOException) {
            // Closed by the deadline: whatever the platform's words, it timed out.
            throw failure(if (expiry.passed) SocketTimeoutException("no complete response within $limitMs ms") else e)
        } finally {
            expiry.cancel()
            connection.disconnect()
        }
    }

    /** Closes [connection] [limitMs] from now, unless cancelled first. */
    private class Deadline(connection: HttpURLConnection, limitMs: Long) {
        @Volatile var passed = false
            private set
        private val task = timer.schedule({
            passed = true
            connection.disconnect()
        }, limitMs, TimeUnit.MILLISECONDS)

        fun cancel() { task.cancel(false) }
    }

    companion object {
        /** One daemon thread for every request's deadline. */
        private val timer = ScheduledThreadPoolExecutor(1) { r ->
            Thread(r, "qp-http-deadline").apply { isDaemon = true }
        }.apply { removeOnCancelPolicy = true }

        private fun millis(ms: Long): Int = ms.coerceIn(1, Int.MAX_VALUE.toLong()).toInt()

        /** What is left of the budget; none left is a timeout now. */
        private fun remainingMs(deadline: Long, limitMs: Long): Long {
            val left = (deadline - System.nanoTime()) / 1_000_000
            if (left <= 0) throw SocketTimeoutException("no complete response within $limitMs ms")
            return left
        }

        /** The body, as long as the deadline allows: a server sending a
         *  byte at a time never waits out a read timeout. */
        private fun readWithin(stream: java.io.InputStream, deadline: Long, limitMs: Long): ByteArray {
            val out = java.io.ByteArrayOutputStream()
            val chunk = ByteArray(8192)
            while (true) {
                val n = stream.read(chunk)
                if (n < 0) return out.toByteArray()
                out.write(chunk, 0, n)
                remainingMs(deadline, limitMs)
            }
        }

        /** Registers this transport for every phone of the process. */
        @JvmStatic
        fun install() = setHttpTransport(HttpUrlConnectionTransport())

        internal fun method(m: HttpMethod): String = when (m) {
            HttpMethod.GET -> "GET"
            HttpMethod.POST -> "POST"
            HttpMethod.PUT -> "PUT"
            HttpMethod.DELETE -> "DELETE"
        }

        /** An I/O failure as the core reads it: timed out, offline, or
         *  unreachable. A TLS failure says so first (for the logs): the
         *  platform's own words ("PKIX path building failed") do not name
         *  the likely cause, a CA this device does not trust. */
        internal fun failure(e: IOException): HttpException {
            val reason = e.message ?: e.javaClass.simpleName
            return when (e) {
                is SocketTimeoutException -> HttpException.TimedOut(reason)
                // No name resolution: on a phone, almost always no network.
                is UnknownHostException -> HttpException.Offline(reason)
                is SSLHandshakeException -> HttpException.Unreachable(
                    "TLS handshake failed (is the server's certificate issued by a CA this device trusts?): $reason")
                is SSLException -> HttpException.Unreachable("TLS failed: $reason")
                else -> HttpException.Unreachable(reason)
            }
        }
    }
}
