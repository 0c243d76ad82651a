let wasm_bindgen = (function(exports) {
    let script_src;
    if (typeof document !== 'undefined' && document.currentScript !== null) {
        script_src = new URL(document.currentScript.src, location.href).toString();
    }

    /**
     * One person's responder in one browser: their languages and user id.
     */
    class Responder {
        __destroy_into_raw() {
            const ptr = this.__wbg_ptr;
            this.__wbg_ptr = 0;
            ResponderFinalization.unregister(this);
            return ptr;
        }
        free() {
            const ptr = this.__destroy_into_raw();
            wasm.__wbg_responder_free(ptr, 0);
        }
        /**
         * What a screen reader announces for a question that arrived: the
         * phone's "New question", then who asks (`title`, the cell's) and
         * the question, punctuated as the language punctuates.
         * @param {string} title
         * @param {string} prompt
         * @returns {string}
         */
        announce(title, prompt) {
            let deferred3_0;
            let deferred3_1;
            try {
                let ptr0, len0, ptr1, len1;
                try {
                    ptr0 = passStringToWasm0(title, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                    len0 = WASM_VECTOR_LEN;
                    ptr1 = passStringToWasm0(prompt, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                    len1 = WASM_VECTOR_LEN;
                } catch (e) {
                    if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
                    if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
                    throw e;
                }
                const ret = wasm.responder_announce(this.__wbg_ptr, ptr0, len0, ptr1, len1);
                deferred3_0 = ret[0];
                deferred3_1 = ret[1];
                return getStringFromWasm0(ret[0], ret[1]);
            } finally {
                wasm.__wbindgen_free(deferred3_0, deferred3_1, 1);
            }
        }
        /**
         * Checks what the person did against the question (a JSON Question or
         * compact question) before it is sent: `action` is `qp.v.<value>` for
         * a button or `qp.text` for a typed reply (`text`). Returns the answer
         * body as JSON, or the reason in the person's language.
         * @param {string} question
         * @param {string} action
         * @param {string | null} [text]
         * @returns {string}
         */
        answer(question, action, text) {
            let deferred5_0;
            let deferred5_1;
            try {
                let ptr0, len0, ptr1, len1, ptr2, len2;
                try {
                    ptr0 = passStringToWasm0(question, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                    len0 = WASM_VECTOR_LEN;
                    ptr1 = passStringToWasm0(action, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                    len1 = WASM_VECTOR_LEN;
                    ptr2 = isLikeNone(text) ? 0 : passStringToWasm0(text, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                    len2 = WASM_VECTOR_LEN;
                } catch (e) {
                    if (ptr2) { wasm.__wbindgen_free(ptr2, len2 * 1, 1); }
                    if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
                    if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
                    throw e;
                }
                const ret = wasm.responder_answer(this.__wbg_ptr, ptr0, len0, ptr1, len1, ptr2, len2);
                var ptr4 = ret[0];
                var len4 = ret[1];
                if (ret[3]) {
                    ptr4 = 0; len4 = 0;
                    throw takeFromExternrefTable0(ret[2]);
                }
                deferred5_0 = ptr4;
                deferred5_1 = len4;
                return getStringFromWasm0(ptr4, len4);
            } finally {
                wasm.__wbindgen_free(deferred5_0, deferred5_1, 1);
            }
        }
        /**
         * The notification for a push that cannot be shown as a question or a
         * resolution (a payload that does not parse, a resolution of a question
         * this browser cannot read): `{"title","body"}`, "open the app" words.
         * @returns {string}
         */
        fallback() {
            let deferred1_0;
            let deferred1_1;
            try {
                const ret = wasm.responder_fallback(this.__wbg_ptr);
                deferred1_0 = ret[0];
                deferred1_1 = ret[1];
                return getStringFromWasm0(ret[0], ret[1]);
            } finally {
                wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
            }
        }
        /**
         * The feed: `questions` is a JSON array of the server's Question
         * objects; returns a JSON array of cells, newest first.
         * @param {string} questions
         * @param {number} now_ms
         * @returns {string}
         */
        feed(questions, now_ms) {
            let deferred4_0;
            let deferred4_1;
            try {
                const val2 = +now_ms;
                const ptr0 = passStringToWasm0(questions, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                const len0 = WASM_VECTOR_LEN;
                const ret = wasm.responder_feed(this.__wbg_ptr, ptr0, len0, val2);
                var ptr3 = ret[0];
                var len3 = ret[1];
                if (ret[3]) {
                    ptr3 = 0; len3 = 0;
                    throw takeFromExternrefTable0(ret[2]);
                }
                deferred4_0 = ptr3;
                deferred4_1 = len3;
                return getStringFromWasm0(ptr3, len3);
            } finally {
                wasm.__wbindgen_free(deferred4_0, deferred4_1, 1);
            }
        }
        /**
         * The language the copy is in (`ar`, `pt-BR`): the page's `lang`.
         * @returns {string}
         */
        language() {
            let deferred1_0;
            let deferred1_1;
            try {
                const ret = wasm.responder_language(this.__wbg_ptr);
                deferred1_0 = ret[0];
                deferred1_1 = ret[1];
                return getStringFromWasm0(ret[0], ret[1]);
            } finally {
                wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
            }
        }
        /**
         * `languages`: `navigator.languages`, most preferred first. `me`: the
         * signed-in user's id (empty before pairing).
         * @param {string[]} languages
         * @param {string} me
         */
        constructor(languages, me) {
            let ptr0, len0, ptr1, len1;
            try {
                ptr0 = passArrayJsValueToWasm0(languages, wasm.__wbindgen_malloc);
                len0 = WASM_VECTOR_LEN;
                ptr1 = passStringToWasm0(me, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                len1 = WASM_VECTOR_LEN;
            } catch (e) {
                if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
                if (ptr0) { wasm.__externref_drop_slice(ptr0, len0); wasm.__wbindgen_free(ptr0, len0 * 4, 4); }
                throw e;
            }
            const ret = wasm.responder_new(ptr0, len0, ptr1, len1);
            this.__wbg_ptr = ret;
            ResponderFinalization.register(this, this.__wbg_ptr, this);
            return this;
        }
        /**
         * Why an answer was not sent, as the phone says it: `status` is what
         * the server answered (`POST /api/questions/{id}/answer`). A refusal
         * for good (400, 403, 404, 422) says so with its code, never "try
         * again"; a failure that may pass (5xx, 429) says it will be retried;
         * a 401 says to pair this browser again.
         * `question` and `body` as for [`Responder::queued`].
         * @param {string} question
         * @param {string} body
         * @param {number} status
         * @returns {string}
         */
        notSent(question, body, status) {
            let deferred5_0;
            let deferred5_1;
            try {
                const val3 = +status;
                let ptr0, len0, ptr1, len1;
                try {
                    ptr0 = passStringToWasm0(question, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                    len0 = WASM_VECTOR_LEN;
                    ptr1 = passStringToWasm0(body, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                    len1 = WASM_VECTOR_LEN;
                } catch (e) {
                    if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
                    if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
                    throw e;
                }
                const ret = wasm.responder_notSent(this.__wbg_ptr, ptr0, len0, ptr1, len1, val3);
                var ptr4 = ret[0];
                var len4 = ret[1];
                if (ret[3]) {
                    ptr4 = 0; len4 = 0;
                    throw takeFromExternrefTable0(ret[2]);
                }
                deferred5_0 = ptr4;
                deferred5_1 = len4;
                return getStringFromWasm0(ptr4, len4);
            } finally {
                wasm.__wbindgen_free(deferred5_0, deferred5_1, 1);
            }
        }
        /**
         * Why notifications are not on when the server refused this
         * browser's registration (`POST /api/devices` answered `status`):
         * in the person's language, never the server's English.
         * @param {number} status
         * @returns {string}
         */
        notificationsRefused(status) {
            let deferred1_0;
            let deferred1_1;
            try {
                const ret = wasm.responder_notificationsRefused(this.__wbg_ptr, status);
                deferred1_0 = ret[0];
                deferred1_1 = ret[1];
                return getStringFromWasm0(ret[0], ret[1]);
            } finally {
                wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
            }
        }
        /**
         * Why pairing failed, in the person's language (the phone's words):
         * `status` is what `POST /api/pair` (or its preview) answered, 0 when
         * the server could not be reached.
         * @param {number} status
         * @returns {string}
         */
        pairFailure(status) {
            let deferred1_0;
            let deferred1_1;
            try {
                const ret = wasm.responder_pairFailure(this.__wbg_ptr, status);
                deferred1_0 = ret[0];
                deferred1_1 = ret[1];
                return getStringFromWasm0(ret[0], ret[1]);
            } finally {
                wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
            }
        }
        /**
         * A Web Push's decrypted payload: `{"kind":"question","notification":…,
         * "question":…,"pending":…}` (`pending`: the question as a pending
         * Question, for the feed) or `{"kind":"resolved","notice":…}` (then
         * [`Responder::resolved`] with the question shown). `max_actions` is
         * the browser's `Notification.maxActions`.
         * @param {string} payload
         * @param {number} max_actions
         * @returns {string}
         */
        push(payload, max_actions) {
            let deferred4_0;
            let deferred4_1;
            try {
                const val2 = +max_actions;
                const ptr0 = passStringToWasm0(payload, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                const len0 = WASM_VECTOR_LEN;
                const ret = wasm.responder_push(this.__wbg_ptr, ptr0, len0, val2);
                var ptr3 = ret[0];
                var len3 = ret[1];
                if (ret[3]) {
                    ptr3 = 0; len3 = 0;
                    throw takeFromExternrefTable0(ret[2]);
                }
                deferred4_0 = ptr3;
                deferred4_1 = len3;
                return getStringFromWasm0(ptr3, len3);
            } finally {
                wasm.__wbindgen_free(deferred4_0, deferred4_1, 1);
            }
        }
        /**
         * The notification that replaces a question answered from its button
         * while offline: `{"title": "Approve: queued…", "body": prompt}`, the
         * prompt as the person reads it (a sign-in consent in their language,
         * never the server's English). `question` and `body` as for
         * [`Responder::queued`].
         * @param {string} question
         * @param {string} body
         * @returns {string}
         */
        queuedNotification(question, body) {
            let deferred4_0;
            let deferred4_1;
            try {
                let ptr0, len0, ptr1, len1;
                try {
                    ptr0 = passStringToWasm0(question, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                    len0 = WASM_VECTOR_LEN;
                    ptr1 = passStringToWasm0(body, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                    len1 = WASM_VECTOR_LEN;
                } catch (e) {
                    if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
                    if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
                    throw e;
                }
                const ret = wasm.responder_queuedNotification(this.__wbg_ptr, ptr0, len0, ptr1, len1);
                var ptr3 = ret[0];
                var len3 = ret[1];
                if (ret[3]) {
                    ptr3 = 0; len3 = 0;
                    throw takeFromExternrefTable0(ret[2]);
                }
                deferred4_0 = ptr3;
                deferred4_1 = len3;
                return getStringFromWasm0(ptr3, len3);
            } finally {
                wasm.__wbindgen_free(deferred4_0, deferred4_1, 1);
            }
        }
        /**
         * "Approve: queued, will send when you're online": an answer (its
         * body, as [`Responder::answer`] made it) kept until the connection
         * returns.
         * @param {string} question
         * @param {string} body
         * @returns {string}
         */
        queued(question, body) {
            let deferred4_0;
            let deferred4_1;
            try {
                let ptr0, len0, ptr1, len1;
                try {
                    ptr0 = passStringToWasm0(question, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                    len0 = WASM_VECTOR_LEN;
                    ptr1 = passStringToWasm0(body, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                    len1 = WASM_VECTOR_LEN;
                } catch (e) {
                    if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
                    if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
                    throw e;
                }
                const ret = wasm.responder_queued(this.__wbg_ptr, ptr0, len0, ptr1, len1);
                var ptr3 = ret[0];
                var len3 = ret[1];
                if (ret[3]) {
                    ptr3 = 0; len3 = 0;
                    throw takeFromExternrefTable0(ret[2]);
                }
                deferred4_0 = ptr3;
                deferred4_1 = len3;
                return getStringFromWasm0(ptr3, len3);
            } finally {
                wasm.__wbindgen_free(deferred4_0, deferred4_1, 1);
            }
        }
        /**
         * What a reply field shows as the person types `text`:
         * `{"left": n, "text": "…"}`, `left` counted as the protocol counts
         * (negative when over the limit), `text` saying it in the person's
         * language. An error when the question takes no typed answer.
         * @param {string} question
         * @param {string} text
         * @returns {string}
         */
        replyLeft(question, text) {
            let deferred4_0;
            let deferred4_1;
            try {
                let ptr0, len0, ptr1, len1;
                try {
                    ptr0 = passStringToWasm0(question, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                    len0 = WASM_VECTOR_LEN;
                    ptr1 = passStringToWasm0(text, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                    len1 = WASM_VECTOR_LEN;
                } catch (e) {
                    if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
                    if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
                    throw e;
                }
                const ret = wasm.responder_replyLeft(this.__wbg_ptr, ptr0, len0, ptr1, len1);
                var ptr3 = ret[0];
                var len3 = ret[1];
                if (ret[3]) {
                    ptr3 = 0; len3 = 0;
                    throw takeFromExternrefTable0(ret[2]);
                }
                deferred4_0 = ptr3;
                deferred4_1 = len3;
                return getStringFromWasm0(ptr3, len3);
            } finally {
                wasm.__wbindgen_free(deferred4_0, deferred4_1, 1);
            }
        }
        /**
         * The notification that replaces a question's once resolved. `notice`
         * is a resolved notice or a Question (the server's answer to an
         * answer); `shown` the question the notification showed (compact, or
         * the server's Question when none is showing and it was fetched).
         * @param {string} notice
         * @param {string} shown
         * @returns {string}
         */
        resolved(notice, shown) {
            let deferred4_0;
            let deferred4_1;
            try {
                let ptr0, len0, ptr1, len1;
                try {
                    ptr0 = passStringToWasm0(notice, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                    len0 = WASM_VECTOR_LEN;
                    ptr1 = passStringToWasm0(shown, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                    len1 = WASM_VECTOR_LEN;
                } catch (e) {
                    if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
                    if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
                    throw e;
                }
                const ret = wasm.responder_resolved(this.__wbg_ptr, ptr0, len0, ptr1, len1);
                var ptr3 = ret[0];
                var len3 = ret[1];
                if (ret[3]) {
                    ptr3 = 0; len3 = 0;
                    throw takeFromExternrefTable0(ret[2]);
                }
                deferred4_0 = ptr3;
                deferred4_1 = len3;
                return getStringFromWasm0(ptr3, len3);
            } finally {
                wasm.__wbindgen_free(deferred4_0, deferred4_1, 1);
            }
        }
        /**
         * Whether that language is written right to left: the page's `dir`.
         * @returns {boolean}
         */
        rtl() {
            const ret = wasm.responder_rtl(this.__wbg_ptr);
            return ret !== 0;
        }
        /**
         * @param {string} me
         */
        setUser(me) {
            const ptr0 = passStringToWasm0(me, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
            const len0 = WASM_VECTOR_LEN;
            wasm.responder_setUser(this.__wbg_ptr, ptr0, len0);
        }
        /**
         * The web app's words with names in them: `args` is a JSON object of
         * strings (`{"name": "Federica", "current": "Mallory"}`); each name is
         * isolated for bidirectional text. Bad JSON reads as no names.
         * @param {string} id
         * @param {string} args
         * @returns {string}
         */
        textWith(id, args) {
            let deferred3_0;
            let deferred3_1;
            try {
                let ptr0, len0, ptr1, len1;
                try {
                    ptr0 = passStringToWasm0(id, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                    len0 = WASM_VECTOR_LEN;
                    ptr1 = passStringToWasm0(args, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                    len1 = WASM_VECTOR_LEN;
                } catch (e) {
                    if (ptr1) { wasm.__wbindgen_free(ptr1, len1 * 1, 1); }
                    if (ptr0) { wasm.__wbindgen_free(ptr0, len0 * 1, 1); }
                    throw e;
                }
                const ret = wasm.responder_textWith(this.__wbg_ptr, ptr0, len0, ptr1, len1);
                deferred3_0 = ret[0];
                deferred3_1 = ret[1];
                return getStringFromWasm0(ret[0], ret[1]);
            } finally {
                wasm.__wbindgen_free(deferred3_0, deferred3_1, 1);
            }
        }
        /**
         * The web app's words (titles, buttons around the feed), by id. The
         * app's name is the phone's (its notification channel's): one message
         * in qp-core's copy, so the two cannot drift.
         * @param {string} id
         * @returns {string}
         */
        text(id) {
            let deferred2_0;
            let deferred2_1;
            try {
                const ptr0 = passStringToWasm0(id, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                const len0 = WASM_VECTOR_LEN;
                const ret = wasm.responder_text(this.__wbg_ptr, ptr0, len0);
                deferred2_0 = ret[0];
                deferred2_1 = ret[1];
                return getStringFromWasm0(ret[0], ret[1]);
            } finally {
                wasm.__wbindgen_free(deferred2_0, deferred2_1, 1);
            }
        }
        /**
         * All of [`Responder::text`] as one JSON object, id -> text.
         * @returns {string}
         */
        texts() {
            let deferred1_0;
            let deferred1_1;
            try {
                const ret = wasm.responder_texts(this.__wbg_ptr);
                deferred1_0 = ret[0];
                deferred1_1 = ret[1];
                return getStringFromWasm0(ret[0], ret[1]);
            } finally {
                wasm.__wbindgen_free(deferred1_0, deferred1_1, 1);
            }
        }
    }
    if (Symbol.dispose) Responder.prototype[Symbol.dispose] = Responder.prototype.free;
    exports.Responder = Responder;
    function __wbg_get_imports() {
        const import0 = {
            __proto__: null,
            __wbg___wbindgen_string_get_7ce8eee7fd327545: function(arg0, arg1) {
                const obj = arg1;
                const ret = typeof(obj) === 'string' ? obj : undefined;
                var ptr1 = isLikeNone(ret) ? 0 : passStringToWasm0(ret, wasm.__wbindgen_malloc, wasm.__wbindgen_realloc);
                var len1 = WASM_VECTOR_LEN;
                getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 1, len1, true);
                getDataViewMemory0().setInt32((arg0 >>> 0) + 4 * 0, ptr1, true);
            },
            __wbg___wbindgen_throw_4c88d8bf264fd984: function(arg0, arg1) {
                throw new Error(getStringFromWasm0(arg0, arg1));
            },
            __wbindgen_generic_0000000000000001: function(arg0, arg1) {
                // Cast intrinsic for `Ref(String) -> Externref`.
                const ret = getStringFromWasm0(arg0, arg1);
                return ret;
            },
            __wbindgen_init_externref_table: function() {
                const table = wasm.__wbindgen_externrefs;
                table.set(0, undefined);
                table.set(1024, undefined);
                table.set(1025, null);
                table.set(1026, true);
                table.set(1027, false);
            },
        };
        return {
            __proto__: null,
            "./qp_web_bg.js": import0,
        };
    }

    const ResponderFinalization = (typeof FinalizationRegistry === 'undefined')
        ? { register: () => {}, unregister: () => {} }
        : new FinalizationRegistry(ptr => wasm.__wbg_responder_free(ptr, 1));

    function addToExternrefTable0(obj) {
        const idx = wasm.__externref_table_alloc();
        wasm.__wbindgen_externrefs.set(idx, obj);
        return idx;
    }

    let cachedDataViewMemory0 = null;
    function getDataViewMemory0() {
        if (cachedDataViewMemory0 === null || cachedDataViewMemory0.buffer.detached === true || (cachedDataViewMemory0.buffer.detached === undefined && cachedDataViewMemory0.buffer !== wasm.memory.buffer)) {
            cachedDataViewMemory0 = new DataView(wasm.memory.buffer);
        }
        return cachedDataViewMemory0;
    }

    function getStringFromWasm0(ptr, len) {
        ptr = ptr >>> 0;
        return decodeText(getUint8ArrayMemory0().subarray(ptr, ptr + len));
    }

    let cachedUint8ArrayMemory0 = null;
    function getUint8ArrayMemory0() {
        if (cachedUint8ArrayMemory0 === null || cachedUint8ArrayMemory0.byteLength === 0) {
            cachedUint8ArrayMemory0 = new Uint8Array(wasm.memory.buffer);
        }
        return cachedUint8ArrayMemory0;
    }

    function isLikeNone(x) {
        return x === undefined || x === null;
    }

    function passArrayJsValueToWasm0(array, malloc) {
        const ptr = malloc(array.length * 4, 4) >>> 0;
        for (let i = 0; i < array.length; i++) {
            const add = addToExternrefTable0(array[i]);
            getDataViewMemory0().setUint32(ptr + 4 * i, add, true);
        }
        WASM_VECTOR_LEN = array.length;
        return ptr;
    }

    function passStringToWasm0(arg, malloc, realloc) {
        if (realloc === undefined) {
            const buf = cachedTextEncoder.encode(arg);
            const ptr = malloc(buf.length, 1) >>> 0;
            getUint8ArrayMemory0().subarray(ptr, ptr + buf.length).set(buf);
            WASM_VECTOR_LEN = buf.length;
            return ptr;
        }

        let len = arg.length;
        let ptr = malloc(len, 1) >>> 0;

        const mem = getUint8ArrayMemory0();

        let offset = 0;

        for (; offset < len; offset++) {
            const code = arg.charCodeAt(offset);
            if (code > 0x7F) break;
            mem[ptr + offset] = code;
        }
        if (offset !== len) {
            if (offset !== 0) {
                arg = arg.slice(offset);
            }
            ptr = realloc(ptr, len, len = offset + arg.length * 3, 1) >>> 0;
            const view = getUint8ArrayMemory0().subarray(ptr + offset, ptr + len);
            const ret = cachedTextEncoder.encodeInto(arg, view);

            offset += ret.written;
            ptr = realloc(ptr, len, offset, 1) >>> 0;
        }

        WASM_VECTOR_LEN = offset;
        return ptr;
    }

    function takeFromExternrefTable0(idx) {
        const value = wasm.__wbindgen_externrefs.get(idx);
        wasm.__externref_table_dealloc(idx);
        return value;
    }

    let cachedTextDecoder = new TextDecoder('utf-8', { ignoreBOM: true });
    cachedTextDecoder.decode();
    function decodeText(bytes) {
        return cachedTextDecoder.decode(bytes);
    }

    const cachedTextEncoder = new TextEncoder();

    if (!('encodeInto' in cachedTextEncoder)) {
        cachedTextEncoder.encodeInto = function (arg, view) {
            const buf = cachedTextEncoder.encode(arg);
            view.set(buf);
            return {
                read: arg.length,
                written: buf.length
            };
        };
    }

    let WASM_VECTOR_LEN = 0;

    let wasmModule, wasmInstance, wasm;
    function __wbg_finalize_init(instance, module) {
        wasmInstance = instance;
        wasm = instance.exports;
        wasmModule = module;
        cachedDataViewMemory0 = null;
        cachedUint8ArrayMemory0 = null;
        wasm.__wbindgen_start();
        return wasm;
    }

    async function __wbg_load(module, imports) {
        if (typeof Response === 'function' && module instanceof Response) {
            if (!module.ok) {
                throw new Error(`failed to fetch Wasm: ${module.status} ${module.statusText} fetching '${module.url}'`);
            }

            if (typeof WebAssembly.instantiateStreaming === 'function') {
                try {
                    return await WebAssembly.instantiateStreaming(module, imports);
                } catch (e) {
                    const validResponse = expectedResponseType(module.type);

                    if (validResponse && module.headers.get('Content-Type') !== 'application/wasm') {
                        console.warn("`WebAssembly.instantiateStreaming` failed because your server does not serve Wasm with `application/wasm` MIME type. Falling back to `WebAssembly.instantiate` which is slower. Original error:\n", e);

                    } else { throw e; }
                }
            }

            const bytes = await module.arrayBuffer();
            return await WebAssembly.instantiate(bytes, imports);
        } else {
            const instance = await WebAssembly.instantiate(module, imports);

            if (instance instanceof WebAssembly.Instance) {
                return { instance, module };
            } else {
                return instance;
            }
        }

        function expectedResponseType(type) {
            switch (type) {
                case 'basic': case 'cors': case 'default': return true;
            }
            return false;
        }
    }

    function initSync(module) {
        if (wasm !== undefined) return wasm;


        if (module !== undefined) {
            if (Object.getPrototypeOf(module) === Object.prototype) {
                ({module} = module)
            } else {
                console.warn('using deprecated parameters for `initSync()`; pass a single object instead')
            }
        }

        const imports = __wbg_get_imports();
        if (!(module instanceof WebAssembly.Module)) {
            module = new WebAssembly.Module(module);
        }
        const instance = new WebAssembly.Instance(module, imports);
        return __wbg_finalize_init(instance, module);
    }

    let __wbg_init_promise;
    async function __wbg_init(module_or_path) {
        if (wasm !== undefined) return wasm;
        if (__wbg_init_promise === undefined) {
            __wbg_init_promise = __wbg_init_once(module_or_path);
            __wbg_init_promise.catch(() => { __wbg_init_promise = undefined; });
        }
        return __wbg_init_promise;
    }

    async function __wbg_init_once(module_or_path) {

        if (module_or_path !== undefined) {
            if (Object.getPrototypeOf(module_or_path) === Object.prototype) {
                ({module_or_path} = module_or_path)
            } else {
                console.warn('using deprecated parameters for the initialization function; pass a single object instead')
            }
        }

        if (module_or_path === undefined && script_src !== undefined) {
            module_or_path = script_src.replace(/\.js$/, "_bg.wasm");
        }
        const imports = __wbg_get_imports();

        if (typeof module_or_path === 'string' || (typeof Request === 'function' && module_or_path instanceof Request) || (typeof URL === 'function' && module_or_path instanceof URL)) {
            module_or_path = fetch(module_or_path);
        }

        const { instance, module } = await __wbg_load(await module_or_path, imports);

        return __wbg_finalize_init(instance, module);
    }

    return Object.assign(__wbg_init, { initSync }, exports);
})({ __proto__: null });
