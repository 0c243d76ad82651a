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
        val connection = try {
            URL(request.url).openConnection() as HttpURLConnection
        } catch (e: IOException) {
            throw failure(e)
        }
        try {
            val limit = request.timeoutMs.toLong().coerceAtMost(Int.MAX_VALUE.toLong()).toInt()
            // Connecting and reading each get the whole limit; the core
            // bounds the exchange as a whole.
            connection.connectTimeout = limit
            connection.readTimeout = limit
            connection.requestMethod = method(request.method)
            connection.instanceFollowRedirects = false
            connection.useCaches = false
            for (h in request.headers) connection.setRequestProperty(h.name, h.value)
            val body = request.body
            if (body != null) {
                connection.doOutput = true
                connection.setFixedLengthStreamingMode(body.size)
                connection.outputStream.use { it.write(body) }
            }
            val status = connection.responseCode
            // 4xx and 5xx come on the error stream; either is a response.
            val stream = if (status >= 400) connection.errorStream else connection.inputStream
            val bytes = stream?.use { it.readBytes() } ?: ByteArray(0)
            HttpResponse(status.toUShort(), bytes)
        } catch (e: IOException) {
            throw failure(e)
        } finally {
            connection.disconnect()
        }
    }

    companion object {
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
