// Every conformance, payload and presentation vector through the generated
// Kotlin bindings (JNA loading the Rust library).
package io.questionprotocol.android

import io.questionprotocol.core.*
import org.junit.Assert.assertTrue
import org.junit.Test
import java.time.Instant

class VectorsTest {
    private val defaultNow = "2026-06-27T10:30:00Z"

    private fun runAll(folder: String, min: Int, run: (Map<String, Any?>) -> String?) {
        val all = vectors(folder)
        val failures = all.mapNotNull { (name, v) ->
            val problem = try { run(v) } catch (e: Throwable) { "threw $e" }
            problem?.let { "$name: $it" }
        }
        assertTrue("${failures.size} of ${all.size} failed:\n" + failures.joinToString("\n"), failures.isEmpty())
        assertTrue("only ${all.size} vectors", all.size >= min)
    }

    private fun context(v: Map<String, Any?>): Pair<Instant, String?> {
        val ctx = v["context"] as Map<*, *>?
        val now = Instant.parse((ctx?.get("now") as String?) ?: defaultNow)
        return now to (if (ctx != null && ctx.containsKey("default_target_user_id")) ctx["default_target_user_id"] as String? else "u_owner")
    }

    private fun validation(e: Throwable, want: Any?): String? =
        if (e is QpException.Validation && norm(mapOf("field" to e.field, "code" to wire(e.code))) == norm(want)) null
        else "unexpected error $e"

    /** The vectors' snake_case code of an error kind (TOO_LONG -> "too_long"). */
    private fun wire(kind: Enum<*>) = kind.name.lowercase()

    private fun state(s: Any?) = QuestionState.valueOf((s as String).uppercase())

    @Test
    fun protocolVectors() = runAll("protocol", 80) { v ->
        val expect = v["expect"]?.let { obj(it) } ?: emptyMap()
        val (now, target) = context(v)
        when (v["kind"]) {
            "ask" -> try {
                val out = normalizeAskJson(toJson(v["input"]), now, target)
                val want = expect["ask"] ?: return@runAll "expected an error, got $out"
                subsetMismatch(obj(parse(out)), obj(want))
            } catch (e: QpException) { validation(e, expect["error"]) }
            "answer" -> {
                val q = obj(parse(normalizeAskJson(toJson(v["ask"]), now, target))).toMutableMap()
                q["id"] = "q_vector"; q["kind"] = "question"; q["state"] = v["state"] ?: "pending"
                q["answer"] = null; q["created_at"] = defaultNow; q["resolved_at"] = if (v["state"] != null) defaultNow else null
                val at = (v["now"] as String?)?.let { Instant.parse(it) } ?: now
                try {
                    val r = applyAnswerJson(toJson(q), toJson(v["submission"]), "u_responder", "Responder", at)
                    if (expect["error"] != null) return@runAll "expected an error"
                    if (r.outcome != expect["outcome"]) return@runAll "outcome ${r.outcome}"
                    val actual = obj(parse(r.questionJson)).toMutableMap()
                    val wantAnswer = expect["answer"] as Map<*, *>?
                    val a = actual["answer"] as Map<*, *>?
                    if (a != null && wantAnswer != null) {
                        if (norm(a["responder"]) != norm(mapOf("id" to "u_responder", "display_name" to "Responder"))) return@runAll "responder"
                        actual["answer"] = a.filterKeys { wantAnswer.containsKey(it) }
                    }
                    subsetMismatch(actual, expect - "outcome")
                } catch (e: QpException) { validation(e, expect["error"]) }
            }
            "transition" -> if (stateTransitionAllowed(state(v["from"]), state(v["to"])) == v["allowed"]) null else "transition"
            "question_wire" -> subsetMismatch(obj(parse(normalizeQuestionJson(toJson(v["input"])))), obj(expect["question"]))
            else -> "unknown kind"
        }
    }

    @Test
    fun payloadVectors() = runAll("payload", 60) { v ->
        val expect = obj(v["expect"])
        try {
            when (v["kind"]) {
                "decode_apns", "decode_fcm" -> {
                    val decoded = if (v["kind"] == "decode_fcm") {
                        decodeFcmPayload(obj(v["input"]).mapValues { it.value as String })
                    } else decodeApnsPayload((v["raw"] as String?) ?: toJson(v["input"]))
                    if (expect["error"] != null) return@runAll "expected an error"
                    val got = parse(decodedPushToJson(decoded))
                    if (got == norm(expect["question"] ?: expect["resolved"])) null else "got $got"
                }
                "encode" -> {
                    val q = toJson(v["question"])
                    val apns = encodeApnsPayload(q)
                    val fcm = encodeFcmPayload(q)
                    when {
                        expect["apns"] != null && parse(apns.json) != norm(expect["apns"]) -> "apns ${apns.json}"
                        expect["fcm_data"] != null && subsetMismatch(fcm.data, obj(expect["fcm_data"])) != null -> "fcm data"
                        expect["fcm_qp"] != null && parse(fcm.data["qp"]!!) != norm(expect["fcm_qp"]) -> "fcm qp"
                        norm(apns.omitted) != norm(expect["omitted"]) || norm(apns.shortened) != norm(expect["shortened"]) -> "report"
                        else -> null
                    }
                }
                "encode_resolved" -> {
                    val q = toJson(v["question"])
                    if (parse(encodeApnsResolvedPayload(q, v["me"] as String?).json) != norm(expect["apns"])) "apns"
                    else if (encodeFcmResolvedPayload(q).data["type"] != "resolved") "fcm" else null
                }
                "encode_budget" -> {
                    val q = toJson(v["question"])
                    val apns = encodeApnsPayload(q)
                    val fcm = encodeFcmPayload(q)
                    val fcmBytes = fcm.data.entries.sumOf { it.key.toByteArray().size + it.value.toByteArray().size }
                    val back = decodeApnsPayload(apns.json) as DecodedPush.Question
                    val source = obj(v["question"])
                    val values = (source["options"] as List<*>).map { obj(it)["value"] }
                    when {
                        apns.json.toByteArray().size > 4096 || fcmBytes > 4096 -> "over 4096 bytes"
                        back.question.id != source["id"] || back.question.options.map { it.value } != values -> "lost an id or option"
                        norm(apns.shortened) != norm(expect["shortened_apns"]) || norm(fcm.shortened) != norm(expect["shortened_fcm"]) -> "shortened"
                        else -> null
                    }
                }
                else -> "unknown kind"
            }
        } catch (e: QpException.Payload) {
            if (expect["error"] != wire(e.kind)) "error ${e.kind}"
            else if (expect["field"] != null && expect["field"] != e.field) "field ${e.field}" else null
        }
    }

    private fun question(compact: Any?): PushQuestion =
        (decodeApnsPayload("{\"qp\":${toJson(compact)}}") as DecodedPush.Question).question

    private fun style(s: OptionStyle) = s.name.lowercase()

    private fun ios(n: IosNotification): Map<String, Any?> = mapOf(
        "title" to n.title, "subtitle" to n.subtitle, "body" to n.body, "thread_id" to n.threadId,
        "category" to mapOf(
            "identifier" to n.category.identifier,
            "actions" to n.category.actions.map {
                mapOf("identifier" to it.identifier, "title" to it.title, "destructive" to it.destructive,
                    "authentication_required" to it.authenticationRequired, "foreground" to it.foreground)
            },
            "text_action" to n.category.textAction?.let {
                mapOf("identifier" to it.identifier, "title" to it.title, "button_title" to it.buttonTitle,
                    "placeholder" to it.placeholder, "authentication_required" to it.authenticationRequired)
            },
        ),
    )

    private fun android(n: AndroidNotification): Map<String, Any?> = mapOf(
        "channel_id" to n.channelId, "tag" to n.tag, "title" to n.title, "text" to n.text, "sub_text" to n.subText,
        "group" to n.group, "when_ms" to n.whenMs, "timeout_after_ms" to n.timeoutAfterMs,
        "actions" to n.actions.map { a ->
            mapOf("action_id" to a.actionId, "title" to a.title, "style" to style(a.style),
                "remote_input" to a.remoteInput?.let {
                    mapOf("result_key" to it.resultKey, "label" to it.label, "choices" to it.choices,
                        "allow_free_form_input" to it.allowFreeFormInput)
                },
                "mutable_intent" to a.mutableIntent, "authentication_required" to a.authenticationRequired)
        },
    )

    @Test
    fun presentationVectors() = runAll("present", 40) { v ->
        val expect = obj(v["expect"])
        when (v["kind"]) {
            "present" -> {
                val q = question(v["question"])
                val unlock = obj(v["options"])["require_unlock_for_danger"] as Boolean
                val wantAndroid = obj(expect["android"]).toMutableMap()
                val slots = (wantAndroid["actions"] as List<*>).map { (obj(it)["slot"] as Number).toInt() }
                wantAndroid["actions"] = (wantAndroid["actions"] as List<*>).map { obj(it) - "slot" }
                val n = androidNotification(q, Instant.parse(v["now"] as String), unlock, listOf())
                when {
                    norm(ios(iosNotification(q, unlock, listOf()))) != norm(expect["ios"]) -> "ios ${ios(iosNotification(q, unlock, listOf()))}"
                    norm(android(n)) != norm(wantAndroid) -> "android ${android(n)}"
                    n.actions.map { it.requestCode } != slots.map { androidRequestCode(q.id, it.toUInt()) } -> "request codes"
                    n.contentRequestCode != androidRequestCode(q.id, 0u) || n.notificationId != androidNotificationId(q.id) -> "ids"
                    else -> null
                }
            }
            "copy" -> {
                val q = obj(v["question"])
                val scope = if (q["responder_scope"] == "room") ResponderScope.ROOM else ResponderScope.DIRECT
                when {
                    expect.containsKey("title") && copyTitle(scope, "Release Bot") != expect["title"] -> "title"
                    expect.containsKey("resolution") && copyResolution(toJson(q), v["me"] as String?) != expect["resolution"] -> "resolution"
                    expect.containsKey("time_remaining") &&
                        copyTimeRemaining(Instant.parse(q["expires_at"] as String), Instant.parse(v["now"] as String)) != expect["time_remaining"] -> "time"
                    else -> null
                }
            }
            "registry" -> {
                val known = (v["known"] as List<*>).map {
                    val k = obj(it)
                    KnownQuestion(k["question_id"] as String, state(k["state"]),
                        Instant.parse(k["expires_at"] as String), Instant.parse(k["created_at"] as String))
                }
                @Suppress("UNCHECKED_CAST")
                val plan = planIosCategories(v["registered"] as List<String>, v["new"] as String, known,
                    Instant.parse(v["now"] as String), (v["max"] as Number).toInt().toUInt())
                if (norm(mapOf("keep" to plan.keep, "removed" to plan.removed)) == norm(expect)) null else "$plan"
            }
            "map_action" -> {
                val q = question(v["question"])
                try {
                    val a = mapNotificationAction(q, v["action_id"] as String, v["text"] as String?)
                    val got = if (a.value != null) mapOf("value" to a.value) else mapOf("text" to a.text)
                    if (norm(got) == norm(expect)) null else "got $got"
                } catch (e: QpException.Action) {
                    if (wire(e.kind) != expect["error"]) "error ${e.kind}"
                    else if (expect["kept_text"] != null && e.keptText != expect["kept_text"]) "kept text" else null
                }
            }
            else -> "unknown kind"
        }
    }

    @Test
    fun i18nVectors() = runAll("i18n", 400) { v ->
        @Suppress("UNCHECKED_CAST")
        val got = localizedCopy(v["languages"] as List<String>, v["kind"] as String, toJson(v["args"]))
        if (got == v["expect"]) null else "got $got"
    }


    /** Sealed pushes pinned with fixed keys, opened through the core. */
    @Test
    fun sealedPushVectors() {
        val dir = java.nio.file.Files.createTempDirectory("qp-e2e").toFile()
        runAll("e2e", 8) { v ->
            val key = (v["device_secret"] as String?)?.let { java.util.Base64.getDecoder().decode(it) }
            val phone = PhoneCore(java.io.File(dir, "${v["name"]}.sqlite").path, StoreMode.EXTENSION, "http://127.0.0.1:9",
                "u_federica", StaticToken(null), listOf("en"), MemoryKeyStore(key), v["device_id"] as String?)
            val got: Map<String, Any?> = try {
                @Suppress("UNCHECKED_CAST")
                when (val push = if (v["format"] == "fcm") phone.receiveFcm(v["payload"] as Map<String, String>)
                                  else phone.receiveApns(v["payload"] as String)) {
                    is DecodedPush.Question -> mapOf("kind" to "question", "id" to push.question.id,
                        "prompt" to push.question.prompt, "context" to push.question.context, "asker" to push.question.asker,
                        "room_name" to push.question.room.name, "labels" to push.question.options.map { it.label })
                    is DecodedPush.Resolved -> mapOf("kind" to "resolved", "id" to push.notice.id,
                        "state" to push.notice.state.name.lowercase())
                }
            } catch (e: QpException.Payload) {
                mapOf("error" to e.kind.name.lowercase())
            } finally {
                phone.close()
            }
            if (got == obj(v["expect"])) null else "got $got"
        }
        dir.deleteRecursively()
    }
}
