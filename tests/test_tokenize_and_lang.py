import pytest

from oncall_common.lang import detect_lang
from ingest.tokenize import Tokenizer, ascii_tokens, correct_typos, normalize


def test_identifiers_are_kept_whole_and_split_with_dash_and_underscore_unified():
    tokens = ascii_tokens("set max_num_seqs and --max-num-seqs and kernel.msgmax")
    assert tokens.count("max-num-seqs") == 2
    assert {"max", "num", "seq", "kernel.msgmax", "kernel", "msgmax"} <= set(tokens)


def test_full_width_punctuation_from_fastdeploy_logs_is_folded():
    assert normalize("need_block_len: 1， free_list_len: 0") == "need_block_len: 1, free_list_len: 0"


def test_english_words_are_stemmed_and_stopwords_dropped():
    assert ascii_tokens("the requests are hanging") == ["request", "hang"]


def test_chinese_is_segmented_with_the_kb_dictionary(tmp_path):
    d = tmp_path / "zh.dict"
    d.write_text("推理 500\n卡住 300\n显存 400\n不足 300\n", encoding="utf-8")
    tk = Tokenizer(d)
    assert tk("为什么推理卡住") == ["推理", "卡住"]
    assert tk("显存不足") == ["显存", "不足"]


def test_chinese_fillers_are_no_keywords(tmp_path):
    """"服务到底能扛多少并发，怎么估算？" was refused on the seeds: 到底, a word the docs never use,
    weighed as a sign of a subject they lack. Fillers and courtesies are function words."""
    d = tmp_path / "zh.dict"
    d.write_text("服务 500\n并发 300\n估算 200\n", encoding="utf-8")
    tk = Tokenizer(d)
    assert tk("服务到底能扛多少并发") == tk("服务能扛多少并发")
    assert "感觉" not in tk("感觉显存不够") and "大佬" not in tk("各位大佬，服务到底怎么估算并发")


def test_typos_are_corrected_only_towards_known_terms():
    vocab = {"stuck", "download", "huggingfac", "request", "logprob", "enabl"}
    assert correct_typos(["stuk", "donwload", "huggingfc", "log-prob", "enabel", "request", "kubernetes"], vocab) == [
        "stuck", "download", "huggingfac", "logprob", "enabl", "request", "kubernetes"]
    # The closest kind of typo wins, whatever order the vocabulary lists its terms in.
    assert correct_typos(["log-prob"], ["logprobs", "logprob"]) == ["logprob"]
    assert correct_typos(["log-prob"], ["logprob", "logprobs"]) == ["logprob"]


def test_real_words_and_versions_are_not_corrected_into_kb_terms():
    # One letter changed or added turns a word into another: ROCm is not a room, a seek
    # is not a seed, metal is not Meta, and 0.8.3 is another release than 0.4.3.
    vocab = {"room", "seed", "meta", "context", "0.4.3", "a100", "code", "0.10.0", "three", "entir"}
    # ... and "0.1.0" lacks only a letter of "0.10.0", but digits are never corrected; a swap
    # in a short word makes another word ("there", the stem "entri" of "entries").
    words = ["rocm", "seek", "metal", "content", "0.8.3", "a10g", "coder", "0.1.0", "there", "entri"]
    assert correct_typos(words, vocab) == words


@pytest.mark.parametrize(
    "text,lang",
    [
        ("为什么推理卡住", "zh"),
        ("requests hang after I enabled logprobs", "en"),
        ("为什么 vLLM 报 CUDA out of memory", "zh"),
        ("开了logprobs之后请求卡住", "zh"),
        ("这个日志是什么意思\nRuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191, unhandled system error", "zh"),
        ("What does 显存 mean in this English sentence about GPU memory usage?", "en"),
        # a Chinese frame around an error pasted on the same line is still a Chinese question
        ("报错 ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
         "when initializing the engine.", "zh"),
        ("A100 80G 用 vLLM 跑 qwen-7b-chat 报 torch.cuda.OutOfMemoryError: CUDA out of memory. "
         "Tried to allocate 234.00 MiB. GPU 0 has a total capacity of 79.15 GiB", "zh"),
        ("swift export 量化时报 IndexError: list index out of range。是不是目前不支持对 reranker 做 GPTQ？", "zh"),
        # the asker's Chinese after the message ends it, with or without a comma
        ("RuntimeError: cache_kvs memory is not enough 怎么解决", "zh"),
        ("RuntimeError: CUDA error: an illegal memory access was encountered，怎么办", "zh"),
        # one Chinese word typed with Chinese punctuation (trial: answered in English)
        ("CUDA error: an illegal memory access was encountered，vLLM 0.9.1 H20 跑 DeepSeek-R1", "zh"),
        ("the model replies 好。 to every prompt after the upgrade", "en"),
        # Chinese the asker quotes is not the language they write in
        ('The model keeps answering "你好你好你好" in a loop after the upgrade', "en"),
        ("vLLM prints garbage characters like 乱码 in the output when I use the chat endpoint with long prompts", "en"),
        # a command line's flags, values and paths are pasted: the few Chinese words after it are the asker's (trial)
        ("vllm serve Qwen/Qwen2.5-72B-Instruct --tensor-parallel-size 4 --max-model-len 131072 启动报\n"
         "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored in KV cache (98304).", "zh"),
        ("vllm serve Qwen/Qwen2.5-32B-Instruct --gpu-memory-utilization 0.95 --max-model-len 32768 起不来", "zh"),
        ("--max-model-len 131072启动报错", "zh"),
        ("vllm serve --served-model-name 千问 fails with 404 on /v1/chat/completions, why?", "en"),
        # a question after a flag is no value of it (trial)
        ("SGLang 的 --enable-dp-attention 什么时候该开", "zh"),
        ("vllm 的 --max-model-len 怎么设", "zh"),
        # "CUDA error: …" is pasted like "RuntimeError: …": the few Chinese words around it are the asker's
        ("A100 上 vllm 报 CUDA error: an illegal memory access was encountered", "zh"),
        ("ROCm MI300X 上 vllm 报 HIP error: invalid device function", "zh"),
        ("vllm prints CUDA error: out of memory when it sees 你好", "en"),
        # a UI's short Chinese messages quoted in an English question, one after an apostrophe (new trees)
        ("The box runs remotely. The page loads, but asking a question shows '出错了', uploads stay '解析中' and "
         "deleting files says '请求失败'. How should I be accessing it?", "en"),
        ("Card 0 runs someone else's job, and `bash run.sh` always ends with '启动 embedding and rerank 服务超时'. "
         "How do I move it to card 1?", "en"),
        ("After the upgrade the console says “模型加载失败” on every start, what does that mean?", "en"),
        ("What is ‘模型加载失败’ in the console?", "en"),
        # ... on a line of its own, or as list items (review)
        ('The console shows this on every start:\n"模型加载失败"\nWhat does it mean?', "en"),
        ('Uploads fail with:\n- "请求失败"\n- “解析中”\nWhy?', "en"),
        # Chinese in the quotes of a Chinese question, typed with an input method's “…”, is the asker's (review)
        ("RAGFlow 报“文件解析失败”", "zh"),
        ("vllm 0.9.1 报“显存不足”", "zh"),
        ("docker compose “启动失败”", "zh"),
        ("vllm “为什么推理卡住”", "zh"),
        ("“推理卡住怎么办” on H100", "zh"),
        ("“为什么推理卡住”", "zh"),
        ("'为什么推理卡住'", "zh"),
        ('`./demo mnn_taiyi/ 1 demo.jpg "一只可爱的猫"` errors out. What arguments does the demo expect?', "en"),
        # one Chinese particle or preposition among English words is a Chinese writer (trial)
        ("vLLM OOM 了", "zh"),
        # a reporting verb alone in a terse line (trial), not in an English sentence naming it
        ("vllm 报 NCCL error", "zh"),
        ("vllm 又报 CUDA out of memory", "zh"),
        ("tp=2 报 NCCL error", "zh"),
        ("the log says 报错 then exits", "en"),
        # ... nor after an English verb naming the word (review)
        ("I see 报错 in the log when starting vllm", "en"),
        ("What does 报错 mean in the vLLM log?", "en"),
        ("log contains 报错 token", "en"),
        ("How to translate 报 to English", "en"),
        ("H100 上 vLLM CUDA out of memory", "zh"),
        ("ASCEND 910B 上 vLLM OOM", "zh"),
        ("why is TTFT so high on 千问 model", "en"),
        ("model path /data/模型/上/x fails", "en"),
        # ... but not a character quoted as output (review)
        ("Qwen replies with a single 了 after every answer", "en"),
        ("tokenizer splits 中 into two tokens", "en"),
        ("the model replies 了。 to every prompt", "en"),
        ("the model output ends with 了", "en"),
        # without a space, and the other particles and prepositions (review)
        ("H100上 vLLM CUDA out of memory", "zh"),
        ("A100 下 vllm hang", "zh"),
        ("vllm 里 CUDA OOM", "zh"),
        ("TP=4 时 NCCL timeout", "zh"),
    ],
)
def test_language_detection(text, lang):
    assert detect_lang(text) == lang


def test_a_rebuilt_dictionary_segments_only_new_chinese_and_equals_one_built_from_scratch(tmp_path, monkeypatch):
    """Loading jieba took half of a re-ingest after editing one English article; the runs a
    previous build segmented are kept beside its dictionary."""
    import sys

    from ingest.tokenize import RUNS_FILE, build_dictionary

    texts = ["推理服务卡住，显存不足", "启动时报 NCCL 错误", "请求一直不返回"]
    first, scratch, again = (tmp_path / name for name in ("first", "scratch", "again"))
    for d in (first, scratch, again):
        d.mkdir()
    build_dictionary(texts, first / "zh.dict")
    assert (first / RUNS_FILE).is_file()
    more = texts + ["模型下载一直卡住"]
    build_dictionary(more, scratch / "zh.dict")
    build_dictionary(more, again / "zh.dict", previous=first)
    assert (again / "zh.dict").read_text(encoding="utf-8") == (scratch / "zh.dict").read_text(encoding="utf-8")
    # Nothing new: jieba is not needed at all (an import of it would fail here).
    monkeypatch.setitem(sys.modules, "jieba", None)
    fourth = tmp_path / "fourth"
    fourth.mkdir()
    build_dictionary(more[::-1], fourth / "zh.dict", previous=again)
    assert (fourth / "zh.dict").read_text(encoding="utf-8") == (scratch / "zh.dict").read_text(encoding="utf-8")
    # A damaged runs file is ignored, not trusted.
    (again / RUNS_FILE).write_text('{"jieba": "x", "runs": {"推理": ["bogus"]}}', encoding="utf-8")
    monkeypatch.delitem(sys.modules, "jieba")
    fifth = tmp_path / "fifth"
    fifth.mkdir()
    build_dictionary(more, fifth / "zh.dict", previous=again)
    assert (fifth / "zh.dict").read_text(encoding="utf-8") == (scratch / "zh.dict").read_text(encoding="utf-8")


def test_a_chinese_sentence_around_a_long_paste_is_chinese():
    """"vllm serve 启动就报 CUDA out of memory，Tried to allocate …，命令是 vllm serve …" was
    answered in English: the paste's English words outnumbered the asker's Chinese ones."""
    from oncall_common.lang import detect_lang

    question = ("vllm serve 启动就报 CUDA out of memory，Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total capacity; "
                "75.12 GiB already allocated; 1.20 GiB free; 76.00 GiB reserved in total by PyTorch)，命令是 vllm serve "
                "/models/qwen --tensor-parallel-size 2 --max-model-len 32768 --gpu-memory-utilization 0.95")
    assert detect_lang(question) == "zh"
    assert detect_lang("How do I read the 显存 column of nvidia-smi on an A100 when the server starts?") == "en"
    # Chinese in a path or a model's name is no Chinese sentence
    assert detect_lang("I run vllm serve /data/模型/千问72B --tensor-parallel-size 4 and it fails with a long error, "
                       "how do I fix it?") == "en"


def test_what_follows_a_chinese_verb_of_reporting_is_pasted():
    """"客户端报 400：This model's maximum context length is 8192 tokens…" and "调 chat 接口报 As of
    transformers v4.44, …" were answered in English: a few Chinese words, then a long English
    message that does not start as an exception's name (trial)."""
    from oncall_common.lang import detect_lang

    assert detect_lang("客户端报 400：This model's maximum context length is 8192 tokens. However, you requested 9000 tokens "
                       "(5000 in the messages, 4000 in the completion). Please reduce the length of the messages.") == "zh"
    assert detect_lang("调 chat 接口报 As of transformers v4.44, default chat template is no longer allowed, so you must "
                       "provide a chat template if the tokenizer does not define one.") == "zh"
    # an English sentence that quotes the word is English
    assert detect_lang("I see 报错 in the log when starting vllm with tp 2 on our cluster, what should I check first?") == "en"


def test_a_long_run_with_no_space_is_read_in_linear_time():
    """An LLM's 100 kB Chinese reply with no line break took 150 s in the language check and
    froze the HTTP server (trial): the path pattern backtracked over every start in the run."""
    from .conftest import finishes_within

    reply = "原因见 [1]。" + "显存" * 50_000
    assert finishes_within(2.0, detect_lang, reply) and detect_lang(reply) == "zh"
    assert detect_lang("模型放在 /data/模型/千问72B 下面，启动报错") == "zh"  # paths still set aside


def test_an_english_answer_quoting_a_particle_stays_english():
    """The LLM check judges an answer, not an asker: "The repeated 了 comes from …" is English (review)."""
    assert detect_lang("Then it crashes 了 every time") == "zh"
    assert detect_lang("Then it crashes 了 every time", particles=False) == "en"
    from .conftest import finishes_within

    assert finishes_within(0.5, detect_lang, "上 " + "a1" * 50_000)  # one character and its neighbours: linear (review)
