// The adoption guide's custom transport (docs/apps/adopting.md): an app that
// already has OkHttp passes the core's requests through its own client.
// Compiled against OkHttp 5 (a test dependency only: the library needs none;
// `it.body` is nullable on OkHttp 4, as the guide says)
// and driven by OkHttpTransportTest.
package io.questionprotocol.snippets

import io.questionprotocol.core.HttpException
import io.questionprotocol.core.HttpMethod
import io.questionprotocol.core.HttpRequest
import io.questionprotocol.core.HttpResponse
import io.questionprotocol.core.HttpTransport
import io.questionprotocol.core.setHttpTransport
import java.io.IOException
import java.io.InterruptedIOException
import java.net.UnknownHostException
import java.util.concurrent.TimeUnit
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.withContext
import okhttp3.OkHttpClient
import okhttp3.Request
import okhttp3.RequestBody.Companion.toRequestBody

// snippet: android-okhttp
/** The core's requests through the app's own OkHttpClient: its pool, proxy, interceptors and pinning apply. */
class OkHttpTransport(appClient: OkHttpClient) : HttpTransport {
    // A redirect is the core's to report (it names the status), never followed.
    private val client = appClient.newBuilder().followRedirects(false).followSslRedirects(false).build()

    override suspend fun send(request: HttpRequest): HttpResponse = withContext(Dispatchers.IO) {
        val body = request.body?.toRequestBody()
            ?: if (request.method == HttpMethod.POST || request.method == HttpMethod.PUT) ByteArray(0).toRequestBody() else null
        val builder = Request.Builder().url(request.url).method(request.method.name, body)
        for (h in request.headers) builder.addHeader(h.name, h.value)
        val call = client.newCall(builder.build())
        call.timeout().timeout(request.timeoutMs.toLong(), TimeUnit.MILLISECONDS)   // the core's limit, for the whole call
        try {
            call.execute().use { HttpResponse(it.code.toUShort(), it.body.bytes()) }   // any status is a response
        } catch (e: IOException) {   // no response: say why, as the core reads it
            val reason = e.message ?: e.javaClass.simpleName
            throw when (e) {
                is UnknownHostException -> HttpException.Offline(reason)
                is InterruptedIOException -> HttpException.TimedOut(reason)
                else -> HttpException.Unreachable(reason)
            }
        }
    }
}

fun useAppsOkHttp(appClient: OkHttpClient) {
    setHttpTransport(OkHttpTransport(appClient))   // at launch, in every process, instead of HttpUrlConnectionTransport.install()
}
// end snippet
