"""Quantities in a capacity question, in Chinese, English or both: each number with its unit and the
parameter it belongs to.

The capacity router (`calculations.py`) must never guess, so this module answers one narrow question
well: which number is what. It knows that "8 块 A100" counts GPUs, not blocks; that "输入 2k、输出 6k"
is an input and an output; that "block_size 我们改成了 128" sets block_size; that "2 万", "20k",
"20,000" and "２００００" are one value; and that "大概", "约" and "~" make a value approximate, not
unreadable. A number is bound to the nearest label on either side (a name such as `block_size`
before it, a noun such as "blocks" or "层" after it), and a label binds one number only.

Safety: every pattern here runs in linear time. Text is normalised first (NFKC, whitespace runs
collapsed to one space, digit runs cut to 20 digits) so no pattern meets an unbounded run, and no
pattern nests quantifiers. Numbers are read as `Decimal`; anything over 10^15 is marked "too large"
instead of raising OverflowError.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation

from .names import MODEL_FAMILIES

MAX_CHARS = 16_000  # questions are capped at 8 kB before they get here; this bounds other callers
MAX_VALUE = Decimal(10) ** 15
PRE_GAP = 16  # characters allowed between a label and the number after it ("block_size 我们改成了 128")
POST_GAP = 6  # characters allowed between a number and its noun ("17131 个 block")
# ... and between a count and a card named with its maker or line ("4x RTX 4090", "2x NVIDIA A100"):
# "4x RTX 4090 serving Qwen2.5-72B-AWQ" counted one card, and its 34 GiB of weights were said to
# need more than that one card holds, on four cards that hold them (trial).
CARD_GAP = 18
OFF_SIDE_PENALTY = 6  # a label on its unusual side ("blocks: 17131") loses to one on its usual side
WEAK_PENALTY = 10  # "平均"/"each request" yield to a nearby "输入"/"output": "prompts average 1.5k" is input
WEAK = {"per_request"}

# Chinese punctuation that NFKC keeps, or that would glue numbers together ("9000，128" → "9000,128").
_PUNCT = str.maketrans({"，": ", ", "、": ", ", "。": ". ", "；": "; ", "！": "! ", "？": "? ", "～": "~", "〜": "~",
                        "＋": "+", "—": "-", "–": "-", "－": "-", "·": " ", "∶": ":"})
# "１７，１３１": a full-width comma between full-width digits groups thousands; elsewhere it separates.
_WIDE_THOUSANDS = re.compile(r"(?<=[０-９])，(?=[０-９]{3}(?![０-９]))")
_ASCII_LOWER = str.maketrans({c: c.lower() for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"})
_WS = re.compile(r"\s+")
_LONG_DIGITS = re.compile(r"[0-9]{21,}")
_GLUED_TP = re.compile(r"(?<![a-z])tp(?=[0-9])")  # "tp2" → "tp 2"

_NUMBER = re.compile(
    r"(?<![a-z0-9_.])(-?)([0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|[0-9]+)(\.[0-9]+)?(?!\.[0-9])"  # not "0.8.2", a version
    r"(?: ?(万|千|亿|gib|gb|mib|mb|kib|kb|tib|tb|ki(?![a-z])|(?:k|w|m|g|b)(?![a-z])|%|[x×](?![a-z0-9])(?! ?[0-9])))?"
)
# Digits with o, l or i typed among them, as a whole word: "5o4,608", "1o24", "2l0". Not a
# model size or name ("7b", "qwen2.5", "h100", "gfx942"): those have no digit after the letter
# or start with letters.
_GARBLED = re.compile(r"(?<![a-z0-9_.\-])[0-9]+[oli][0-9][0-9,]*(?![a-z0-9_\-])")
_SCALES = {"万": 10_000, "w": 10_000, "千": 1_000, "k": 1_000, "ki": 1_000, "亿": 100_000_000, "m": 1_000_000}
_BYTES = {"gib": 2**30, "gb": 2**30, "g": 2**30, "mib": 2**20, "mb": 2**20, "kib": 2**10, "kb": 2**10,
          "tib": 2**40, "tb": 2**40}
_SUM_GAP = re.compile(r" ?(?:\+|加上?|plus) ?")
_RANGE_GAP = re.compile(r" ?(?:-|~|到|至|to) ?")
# "between 2000 and 4000 tokens": a range said in words, read as 2000 sessions of 4000 tokens (trial)
_BETWEEN = re.compile(r"(?<![a-z])between ?$")
_BETWEEN_AND = re.compile(r" ?and ?")
_CHANGE_GAP = re.compile(r" ?(?:改成了?|改为|改到|换成了?|调成了?|调到|调整为|设成了?|设为|->|→|=>|changed to|set to|became|now) ?")
_SEPARATOR = re.compile(r"[,;!?()\[\]\n]|\. ")
# A value alone in brackets right after its label belongs to it: "one MI300X (192GB)" (trial),
# "2x H100 (80GB each)"; not "4x A100 (320GB total)" nor "(20GB free)" (review).
_OPENING = re.compile(r" ?[(（] ?")
_CLOSING = re.compile(r" ?(?:each|apiece|per (?:gpu|card)|每张|每卡|单卡)? ?[)）]")
_POST_FILLER = re.compile(r" ?(?:个|块|张|台|层|条|路|位|of|的|x)? ?")
_CARD_FILLER = re.compile(r" ?(?:x|×|\*)? ?(?:(?:nvidia|geforce|rtx|gtx|tesla|amd|radeon|instinct) ?){1,3}")
_FRACTION = re.compile(r"0?\.\d+")
_RIGHT_BEFORE = re.compile(r" ?[=:]? ?")
_BUSY = re.compile(r"nvidia-smi|\bsmi\b|shows|showing|显示|监控|dashboard|grafana")
_APPROX = re.compile(r"大概|大约|约|~|≈|about|around|roughly|approx|左右|上下|估计|差不多")
_AFTER_APPROX = re.compile(r" ?(?:左右|上下(?!文)|or so|-ish)")  # (not 上下文, a context: "两万 上下文"; review)
_ODD = re.compile(r" ?多(?![少卡大长久])")  # "一万七千多个": 17,000-odd; right after the number only (not 最多, 多卡; review)
# A length in k with no word of its own, right after a model's size or a verb of serving, is the
# context the model is run at: "8 张 A100 跑 Qwen2.5-72B 32k 能有多少并发", "serving llama-3-70b at
# 32k", "跑 32k". It was left unread and the concurrency asked back (trial).
# Only where what follows asks about it or ends the clause: "at 2k qps", "跑 2k 条数据", "部署 2k
# 个副本", "running 4k concurrent" are other counts, and "max_num_batched_tokens 开到 8k" another
# setting (review). "at" only after the model's size: "throughput drops at 2k" names no context.
_RUN_AT = re.compile(r"(?:\d(?:\.\d+)?b|跑|运行|部署|run(?:ning)?|serv(?:e|ing)|deploy(?:ing)?|\d(?:\.\d+)?b\S* at) ?$")
_RUN_AT_NEXT = re.compile(r"\s*(?:[,，。.?？;；!！:：]|$|能|有多少|的话|需要|要|需|上下文|长度|context|ctx|on\b|with\b|how\b|max\b|what\b|in\b)")
# A size said to be per token, right beside the number, is the KV bytes per token whatever
# else is near: "KV cache 320 KiB per token" was read as a 320 KiB KV cache, and "each token
# takes 128 KB of KV cache" too.
PER_TOKEN_MAX = 16 * 2**20  # a KV size per token is KiB to a few MiB; "80G" beside "per token" is a GPU's memory
_PER_TOKEN_AFTER = re.compile(r" ?(?:per|/|a|each|every|每个?|每一个) ?token")
_PER_TOKEN_BEFORE = re.compile(r"(?:per|each|every|one|a|每个?|每一个|单个?) ?token ?(?:的 ?)?(?:kv(?: ?cache)? ?)?"
                               r"(?:takes|needs|uses|is|costs|=|:|占用?|要|需要|是|大约|约)? ?$")

# vLLM's own start-up lines, read before anything else so their numbers are not re-bound.
# Said as well as logged: "GPU KV cache size is 458,752 tokens", "458752 tokens KV cache" (trial).
_VLLM_KV_TOKENS = re.compile(r"gpu kv cache size(?: ?:| is| ?=) ?([0-9][0-9,]{0,24}) tokens"
                             r"|(?<![0-9,.])([0-9][0-9,]{0,24}) tokens (?:of )?(?:gpu )?kv[ -]cache\b")
_VLLM_MAX_CONC = re.compile(r"maximum concurrency for ([0-9][0-9,]{0,24}) tokens per request: ?([0-9]{1,12}(?:\.[0-9]{1,6})?)x")

NAME, MOD, NOUN, IGNORE = "name", "mod", "noun", "ignore"
FRACTIONAL = {"kv_cache_ratio", "gpu_memory_utilization"}  # the labels whose plain numbers may have a fraction


@dataclass(frozen=True)
class Role:
    kind: str
    category: str
    canonical: str  # "pre": the label usually comes before its number; "post": after it; "both": either


def _roles(*items: tuple[str, str, str]) -> tuple[Role, ...]:
    return tuple(Role(*item) for item in items)


# (pattern, roles). Order matters where two patterns start at the same place: specific before general.
# Each pattern is a bounded alternation of literals (no nested or unbounded quantifiers).
_LABELS: list[tuple[str, tuple[Role, ...]]] = [
    # things that look like capacity numbers but are not
    (r"cpu blocks?|# ?cpu blocks?|swap space|gpu(?= ?[0-9])|cuda:|rank|port|端口|pid|step|version|版本", _roles(("ignore", IGNORE, "pre"))),
    # names: they decide what the number is
    (r"num_blocks_global|num_gpu_blocks_override|num_gpu_blocks|num-gpu-blocks-override|num-gpu-blocks|total_block_num|total block num"
     r"|num_blocks|num blocks|total (?:kv |gpu )?blocks|total number of (?:kv |gpu )?blocks|number of (?:kv cache |kv |gpu )?blocks"
     r"|block ?count|# ?gpu blocks|block ?总数|总 ?block ?数|block ?数量?|总块数|块数", _roles(("num_blocks", NAME, "pre"))),
    (r"prefill_kvcache_block_num|prefill kvcache block num", _roles(("prefill_blocks", NAME, "pre"))),
    (r"tokens? ?(?:per|/|each|every) ?block|token ?每个? ?block", _roles(("block_size", NAME, "post"))),
    (r"block[ _-]?size|blocksize|块大小|page[ _-]?size|每个? ?(?:kv )?block(?: ?的)?(?: ?大小| ?能?放| ?有| ?存)?|每块|per block|each block(?: holds| has| stores)?",
     _roles(("block_size", NAME, "pre"))),
    # ("17131 KV blocks of 16 tokens": the kind of block before it too, or "kv blocks" was read
    # as a noun alone and the 16 as a request's tokens, so the default 64 was used; trial)
    (r"(?:(?:kv|gpu|cache|kv cache) )?(?:blocks? of size|blocks? of(?= ?[0-9])|blocks?, each(?= ?[0-9])|blocks? with size)",
     _roles(("num_blocks", NOUN, "post"), ("block_size", NAME, "pre"))),
    (r"max[ _-]?num[ _-]?seqs?|max[ _-]?seqs", _roles(("max_num_seqs", NAME, "pre"))),
    (r"kv[ _-]?cache[ _-]?ratio", _roles(("kv_cache_ratio", NAME, "pre"))),
    (r"(?:kernel\.)?msgmax", _roles(("msgmax", NAME, "pre"))),
    (r"(?:kernel\.)?msgmnb", _roles(("msgmnb", NAME, "pre"))),
    # DJL's `tensor_parallel_degree` (OPTION_TENSOR_PARALLEL_DEGREE) is the same setting
    (r"tensor[ _-]?parallel(?:[ _-]?(?:size|degree))?|tp[ _-]?size|tp|张量并行(?:数|度)?", _roles(("tensor_parallel_size", NAME, "pre"))),
    (r"head[ _-]?dim(?:ension)?|head[ _-]?size|头维度|每个头的?维度", _roles(("head_dim", NAME, "pre"))),
    (r"gpu[ _-]?memory[ _-]?utili[sz]ation|gpu[ _-]?mem(?:ory)?[ _-]?util|memory[ _-]?utili[sz]ation|显存利用率|显存占用率|显存比例",
     _roles(("gpu_memory_utilization", NAME, "pre"))),
    # How busy something is, not the flag: "nvidia-smi 显示利用率 0.3", "显卡利用率", "GPU 利用率",
    # "平均利用率", "内存利用率", "CPU util" (review). Named before the loose names below, it is the
    # nearer label to their number.
    (r"(?:gpu|显卡|卡的?|平均|内存|cpu|算力|计算|带宽|缓存|sm|显示|nvidia-smi[^,;\n]{0,16}?) ?(?:的 ?)?(?:利用率|使用率)"
     r"|(?:cpu|kv[ _-]?cache|cache|bandwidth|compute|sm|average|avg|mean|shows?|showing) ?(?:gpu ?)?util(?:i[sz]ation)?",
     _roles(("ignore", IGNORE, "pre"))),
    # Shortened names of the flag: "gpu util 0.92", a bare "利用率 0.9" (only a fraction right after).
    # ("util 0.95 instead of 0.92": the bare word, with a fraction right after, trial)
    (r"(?<![a-z] )gpu[ _-]?util(?:i[sz]ation)?|(?<![a-z] )(?<![\w-])util(?![\w-])|(?<![\w\u4e00-\u9fff])(?<![a-z] )利用率|显存使用率",
     _roles(("utilization_loose", NAME, "pre"))),
    (r"top[ _-]?logprobs|num[ _-]?logprobs|logprobs", _roles(("top_logprobs", NAME, "pre"))),
    (r"max[ _-]?batch(?:[ _-]?size)?|max[ _-]?bsz|batch[ _-]?slots?", _roles(("max_batch", NAME, "pre"))),
    (r"mtp[ _-]?tokens|num[ _-]?speculative[ _-]?tokens", _roles(("mtp_tokens", NAME, "pre"))),
    (r"num[ _-]?hidden[ _-]?layers|num[ _-]?layers|n[ _-]?layers?|层数", _roles(("num_layers", NAME, "pre"))),
    (r"num[ _-]?key[ _-]?value[ _-]?heads|num[ _-]?kv[ _-]?heads|kv ?头数|kv[ _-]?heads? ?数", _roles(("num_kv_heads", NAME, "pre"))),
    (r"num[ _-]?attention[ _-]?heads|注意力头数", _roles(("num_attention_heads", NAME, "pre"))),
    (r"hidden[ _-]?size|隐藏层维度", _roles(("hidden_size", NAME, "pre"))),
    (r"kv[ _-]?lora[ _-]?rank", _roles(("kv_lora_rank", NAME, "pre"))),
    (r"qk[ _-]?rope[ _-]?head[ _-]?dim", _roles(("qk_rope_head_dim", NAME, "pre"))),
    (r"gpu ?数量?|卡数|显卡数量?|number of gpus|gpu count|num[ _-]?gpus", _roles(("gpu_count", NAME, "pre"))),
    (r"max[ _-]?model[ _-]?len(?:gth)?|max[ _-]?seq[ _-]?len|max[ _-]?context(?:[ _-]?len(?:gth)?)?|上下文长度|context[ _-]?length"
     r"|context[ _-]?window|最大长度|max(?:imum)? length|序列长度|full[ -]length|满长度", _roles(("max_model_len", MOD, "pre"))),
    # A context named after its length as often as before it: "128k 上下文", "上下文 32k", "128k context".
    # "concurrency at 32k": the length the concurrency is asked at, not 32,000 sessions (trial)
    # Only a length that ends the clause or names the context: "at 8k input + 1k output" is the
    # request's two parts, "at 5k users" a count (review).
    (r"(?<=concurrency )at(?= \d+(?:\.\d+)? ?ki?(?: ?(?:tokens?|context|ctx))? ?(?:[?.,;!]|$))"
     r"|(?<=concurrent )at(?= \d+(?:\.\d+)? ?ki?(?: ?(?:tokens?|context|ctx))? ?(?:[?.,;!]|$))",
     _roles(("max_model_len", NAME, "pre"))),
    # ("32k ctx" too: it was left out of "两张4090 tp2 32k ctx 能跑几个并发", whose concurrency went unsaid; trial)
    (r"上下文|(?<=[\dkmi] )(?:context|ctx)\b(?! each| per)|\bctx(?= ?\d)", _roles(("max_model_len", MOD, "both"))),
    # "3k prompt + 1k output tokens": a prompt or input written right after its number, in such a
    # pair, counts that number's tokens (it was read as the whole request, and asked back).
    (r"\s(?<=[\dk]\s)(?:prompts?|inputs?)(?= ?(?:\+|and|plus|&|,|/) ?\d)", _roles(("input_tokens", NOUN, "post"))),
    # nouns that need a modifier-like phrase before them
    (r"-?tokens? ?(?:per|/|each|an?|every) ?(?:request|req|session|user|query|prompt|sequence|seq|conversation)s?"
     r"|-?tokens? (?:requests?|sessions?|prompts?|sequences?|conversations?)|tokens? each|token ?的请求|token ?的会话|token ?/ ?请求|token ?每个?请求"
     r"|(?:tokens? (?:of )?)?context each|(?:tokens? (?:of )?)?context per (?:request|user|session|conversation)"
     # a length in k before the thing counted: "how many 32k requests", "50 个 8k 的会话"
     r"|\s(?:(?<=\dk\s)|(?<=\dki\s))(?:requests?|reqs?|prompts?|sequences?|seqs|sessions?|conversations?|chats?)\b"
     r"(?!\s*(?:(?:per|a|an|each|every|/)\s*(?:day|hour|hr|minute|min|second|sec|s|24h)\b|at once|concurrent|simultaneous|in parallel|daily))"
     r"|\s(?:(?<=\dk\s)|(?<=\dki\s))的 ?(?:请求|会话|对话|序列)|的(?:(?<=\dk的)|(?<=\dki的)) ?(?:请求|会话|对话|序列)"
     # "50 个 8k 并发", "100 个 4k 请求": each of them is 8k long ("1k 并发" alone is a thousand at once;
     # 8k and 4k were read as 8,000 and 4,000 sessions, trial)
     # (not after 这个/那个/整个: "这个 1k 并发" is a thousand at once, review)
     r"|\s?(?:" + "|".join(rf"(?<=个{gap}{digits}{k}{space})(?<![这那整哪某每]个{gap}{digits}{k}{space})"
                          for gap in ("", " ") for digits in (r"\d", r"\d\d", r"\d\d\d") for k in ("k", "ki")
                          for space in ("", r"\s")) + ")(?:的 ?)?(?:并发|请求|会话|对话)",
     _roles(("tokens_per_request", NOUN, "post"))),
    # A rate is no count of concurrent sessions: "10k requests per day", "日活 3000 用户", "2000 sessions a day".
    # Per second or minute too ("200 requests per second of 2k each", "每秒 10 个请求"): a rate needs
    # the requests' duration to say how many run at once, and was read as 200 at once (review).
    (r"(?:requests?|reqs?|sessions?|users?|calls?|queries|conversations?|chats?) ?(?:per|a|an|each|every|/) ?"
     r"(?:day|hour|hr|week|month|24h|second|sec|s|minute|min)\b"
     r"|(?:requests?|users?|sessions?) (?:daily|a day)|daily (?:active )?(?:users?|requests?|sessions?)|日活(?:跃)?(?:用户)?|每天|每日|一天|每小时|每月"
     r"|每秒(?:钟)?|每分钟|\bdau\b",
     _roles(("ignore", IGNORE, "both"))),
    # "200 个并发，每个请求 2k 输入": the whole "每个请求" says per request, so 请求 is no count of requests.
    # "how many concurrent requests of 8k": a length in k right after "requests of" is each one's
    # length, with no count before it (it was read as 8,000 requests beside a log; trial)
    # (Not "prompts of 8k", a prompt's length; nor "requests of 4k input and 1k output": review.)
    (r"(?:(?:concurrent|simultaneous|parallel) )?(?:sessions?|requests?|reqs?|conversations?|chats?) of"
     r"(?= \d+(?:\.\d+)? ?ki?(?![a-z0-9])(?! ?(?:tokens? )?(?:input|prompt|prefill|in\b|output|completion|generat|decode|out\b)))",
     _roles(("sessions", NOUN, "post"), ("tokens_per_request", NAME, "pre"))),
    (r"(?:sessions?|requests?|users?|conversations?|并发) of|(?:个 ?)?会话, ?每个?(?:请求|会话|用户)?|(?:个 ?)?并发, ?每个?(?:请求|会话|用户)?",
     _roles(("sessions", NOUN, "post"), ("per_request", MOD, "pre"))),
    (r"kv[ _-]?bytes[ _-]?per[ _-]?token|每 ?token ?的 ?kv ?字节数?", _roles(("kv_bytes_per_token", NAME, "pre"))),
    (r"(?:bytes?|字节|b) ?(?:per|/|每个?) ?token|字节每 ?token", _roles(("kv_bytes_per_token", NOUN, "post"))),
    (r"(?:generated|output|completion|new|decode) tokens?|输出 ?tokens?", _roles(("output_tokens", NOUN, "post"))),
    (r"(?:prompt|input|prefill) tokens?|输入 ?tokens?", _roles(("input_tokens", NOUN, "post"))),
    # modifiers: they say which kind of tokens or bytes a number counts
    (r"total capacity of|gpu has a total capacity of", _roles(("gpu_memory", MOD, "pre"))),  # torch's OOM message
    (r"输入 ?(?:加|\+|和|与|及|跟|加上) ?输出|输入输出(?:合计|总和|总共|一共|合起来|加起来)?|input ?(?:\+|and|plus|&) ?output"
     r"|prompt ?(?:\+|and|plus|&) ?(?:completion|output|generation)|in ?\+ ?out|总长度|total(?: length| tokens?)?|合计|一共|总共|加起来",
     _roles(("in_out", MOD, "pre"))),
    (r"输入|inputs?|prompts?|prefill|isl|上文", _roles(("input", MOD, "pre"))),
    (r"输出|outputs?|completions?|generations?|生成|decode|decoding|osl|回复|回答", _roles(("output", MOD, "pre"))),
    # "2k in + 6k out": in and out only right after a number, in such a pair.
    (r"(?<=[\dk] )in(?= ?(?:\+|and|plus|&|,|/))", _roles(("input_tokens", NOUN, "post"))),
    (r"(?<=[\dk] )out\b(?![ -]of)", _roles(("output_tokens", NOUN, "post"))),  # not "3 out of 10", "2 out-of-memory crashes"
    (r"gpu kv cache size|kv[ _-]?cache[ _-]?blocks?|kv[ _-]?blocks?|gpu[ _-]?blocks?|cache blocks?", _roles(("num_blocks", NOUN, "post"))),
    # Memory given to the KV cache, in bytes ("Available KV cache memory: 20.5 GiB", "24 GB free for KV cache").
    (r"available kv[ _-]?cache memory|kv[ _-]?cache memory|kv ?cache ?(?:的 ?)?可用显存|kv ?cache ?显存|kv ?缓存显存"
     r"|(?:free|left|available|spare|remaining|reserved) for (?:the )?kv[ _-]?cache|(?:留|剩|分)给 ?kv ?cache(?: ?的)?(?: ?显存)?",
     _roles(("kv_cache_memory", MOD, "both"))),
    (r"kv[ _-]?cache[ _-]?size|kv ?cache ?(?:大小|容量|总量|能放|可缓存|可以放|holds?|has|can hold)|kv[ _-]?cache|kv ?缓存|kvcache",
     _roles(("kv_cache_tokens", MOD, "pre"))),
    (r"per token|/ ?token|每个? ?token|每 ?tok|a token|one token", _roles(("per_token", MOD, "both"))),
    (r"平均每个?请求|每个?请求(?: ?的)?(?: ?平均)?|每条请求|单个?请求|请求平均|each request|per request|every request|a request|one request"
     r"|average request|avg request|request (?:size|length)|请求长度|平均长度|each session|per session|每个?会话|每个?用户|per user|each|每个|每条|每路",
     _roles(("per_request", MOD, "pre"))),
    (r"on average|average|avg|mean|平均", _roles(("per_request", MOD, "pre"))),
    (r"model loading took|loading took|weights? took|模型权重|权重|model weights|weights?|model size|模型大小|模型占用|模型显存|参数显存",
     _roles(("weights", MOD, "pre"))),
    # Host memory is no GPU memory: "pod 的 memory 120G", "主机内存 512G", "128 GB RAM" stay unread.
    (r"(?:pods?|hosts?|cpu|system|container|node|容器|主机|系统|机器)(?: ?的)? ?(?:memory|mem|ram|内存)|内存|dram|ram",
     _roles(("ignore", IGNORE, "pre"))),
    (r"显存大小|显存|gpu memory|gpu mem|vram|memory per gpu|per[ -]gpu memory|hbm|显卡内存|gpu 内存|memory",
     _roles(("gpu_memory", MOD, "pre"))),
    # nouns: what is counted
    # A card's model counts GPUs before it and sizes their memory after it ("8 张 A100 80G"); a
    # share after it is not the memory's ("A100 90%": busy, not gpu_memory_utilization).
    (r"(?:(?:块|张|台|个) ?)?(?:a100s?|h100s?|h800s?|h20|h200s?|a800s?|l40s?|l20|l4|a6000s?|a40s?|a30s?|4090s?|3090s?|v100s?|t4|a10g?|mi300x?|910b)",
     _roles(("gpus", NOUN, "post"), ("gpu_size", MOD, "pre"))),
    (r"(?:(?:块|张|台|个) ?)?(?:gpus?|cards?|显卡|卡(?!住|顿|死)|昇腾)", _roles(("gpus", NOUN, "post"))),
    (r"blocks?|个 ?block|块(?!大小)", _roles(("num_blocks", NOUN, "post"))),
    (r"bytes?|字节", _roles(("bytes", NOUN, "post"))),
    (r"tokens?|个 ?token|toks?", _roles(("tokens", NOUN, "post"))),
    (r"concurrent (?:requests?|sessions?|users?|connections?|streams?|conversations?|chats?)|simultaneous (?:requests?|sessions?|users?|conversations?)"
     r"|parallel (?:requests?|sessions?)|requests? at once|requests? in parallel|并发(?:请求|会话|用户|对话|数|量)?|路并发|(?:个 ?)?会话|(?:个 ?)?对话"
     # "64 个 32k 的会话": the count, with each one's length between it and the noun
     # ("50 个 8k 并发" too: 8k was read as 8,000 sessions; trial)
     r"|(?<![这那整哪某每])(?=个 ?\d+(?:\.\d+)? ?ki? ?(?:tokens? ?)?(?:的 ?)?(?:会话|请求|对话|并发))个"  # ends in 个: no ASCII word boundary after it (_bounded)
     # "at 128 seqs" is a count of sequences (it was read as 128 blocks from "out of blocks" before it, trial)
     r"|(?:个 ?)?用户|(?:个 ?)?请求|sessions?|conversations?|users?|requests?|reqs?|seqs?|sequences?|concurrency|streams?|路"
     # "50 concurrent 8k requests": the count, with each one's length between it and the noun
     r"|concurrent(?= \d+(?:\.\d+)? ?ki?\b ?-?(?:tokens? )?(?:requests?|reqs?|sessions?|users?|prompts?|chats?|conversations?)\b)",
     _roles(("sessions", NOUN, "post"))),
    (r"(?:hidden |transformer |decoder )?layers?|层(?!数)", _roles(("num_layers", NOUN, "post"))),
    (r"kv[ _-]?heads?|key[ _-]?value[ _-]?heads?|kv ?头|个 ?kv ?heads?", _roles(("num_kv_heads", NOUN, "post"))),
    (r"attention heads?|q heads?|query heads?|heads?|注意力头|个头|头(?!维度|数)", _roles(("num_attention_heads", NOUN, "post"))),
]


def _alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of a pattern ("a|b(c|d)" → ["a", "b(c|d)"])."""
    out, depth, start, escaped = [], 0, 0, False
    for i, ch in enumerate(pattern):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "|" and depth == 0:
            out.append(pattern[start:i])
            start = i + 1
    return out + [pattern[start:]]


def _bounded(pattern: str) -> str:
    """Word boundaries on the ASCII ends of each alternative, so "tp" does not match inside "http" nor
    "port" inside "support"; a Chinese end needs none ("8块" and "17131blocks" still read)."""
    parts = []
    for alt in _alternatives(pattern):
        head = r"(?<![a-z_])" if alt[:1].isascii() and alt[:1] not in "-#/\\" else ""
        tail = "" if not alt[-1:].isascii() else r"(?![a-z0-9_])"
        parts.append(f"{head}(?:{alt}){tail}")
    return "|".join(parts)


_LABEL_RE = re.compile("|".join(f"(?P<l{i}>{_bounded(p)})" for i, (p, _) in enumerate(_LABELS)))
_DTYPE = re.compile(r"(?<![a-z0-9_])(bfloat16|bf16|float16|fp16|half|float32|fp32|fp8_e4m3|fp8_e5m2|fp8|int8)(?![a-z0-9_])")
_KV_DTYPE = re.compile(r"kv[ _-]?cache[ _-]?dtype(?: ?[=:] ?| )(bfloat16|bf16|float16|fp16|half|float32|fp32|fp8_e4m3|fp8_e5m2|fp8|int8|auto)")
_MTP_ON = re.compile(r"(?<![a-z])mtp(?![a-z])|multi[ -]token prediction|投机解码|speculative decoding")
_MTP_OFF = re.compile(r"(?:without|no|not|disabled?|off|不开|关闭了?|关掉|没开|未开启?|不用|没有用?) ?(?:the )?(?:mtp|multi[ -]token)|mtp ?(?:off|disabled|关闭|没开|未开启?)")
_DTYPE_NAMES = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32"}


@dataclass(frozen=True)
class Quantity:
    """One number as written, and what it was read as."""

    label: str  # the parameter it belongs to ("num_blocks", "tokens_per_request", …); "" when unbound
    value: Decimal | None  # None when it cannot be used: a range, or too large to be real
    unit: str  # "count", "bytes" (value in bytes), "ratio", "times" or "params" (a "7B" model size)
    text: str  # as written, normalised: "2 万", "2k + 6k", "80gb"
    start: int
    end: int
    approximate: bool = False
    scale: str = ""  # the multiplier as written: "k", "万", "gib", "%", …
    problem: str = ""  # "range", "too_large", "negative", "not_integer"
    source: str = "question"

    @property
    def usable(self) -> bool:
        return self.value is not None and not self.problem


@dataclass
class Extraction:
    """Everything read from one text."""

    text: str  # the normalised text the spans refer to
    quantities: list[Quantity] = field(default_factory=list)
    dtypes: tuple[str, ...] = ()  # dtype words, normalised and deduplicated ("bfloat16", "fp8")
    kv_cache_dtype: str | None = None
    mtp: bool | None = None  # None: MTP not mentioned
    garbled: tuple[str, ...] = ()  # numbers with a letter typed inside them ("5o4,608"), never read as two numbers

    def by_label(self, label: str) -> list[Quantity]:
        return [q for q in self.quantities if q.label == label]

    def has(self, label: str) -> bool:
        return any(q.label == label for q in self.quantities)

    def unbound(self) -> list[Quantity]:
        return [q for q in self.quantities if not q.label and q.unit in ("count", "bytes")]


# An upper-case K after digits ("16K"), kept apart before lower-casing as "ki": vLLM reads
# --max-model-len 16K as 16384 and 16k as 16000 (calculations.py applies it to that one value).
# A number of its own only: "LLaMA-2-7B-32K" is a checkpoint's name, kept as written (CI).
_UPPER_K = re.compile(r"(?<![\w.\-/])([0-9]+(?:\.[0-9]+)?)K(?![\w\-])")


# Chinese numbers that are one value though written in parts: "1万7千" and "1万7" are 17,000,
# "两万" 20,000, "三千五" 3,500. "1万7千 个 block" was read as 7,000 blocks and 10,000 tokens, and
# "两万" not at all (trial). Rewritten before anything is read, in the scale they were written in.
_CN_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
_CN_UNITS = {"万": 10_000, "千": 1_000, "百": 100}
_CN_NUMERAL = "一二两三四五六七八九十"
_CN_COMPOUND = re.compile(
    rf"(?<![0-9.{_CN_NUMERAL}百千万亿几数多])([0-9]{{1,4}}|[{_CN_NUMERAL}])([万千])"
    # (not before 零: "一万零五百" is left whole, unread, not cut to 10,000; a full stop after
    # it ends a sentence, it is no decimal point; "十万火急" is an idiom; review)
    rf"(?:([0-9]|[{_CN_NUMERAL[:-1]}])([千百])?)?(?![0-9{_CN_NUMERAL}百千万亿零]|\.[0-9]|火急)")
# "2e4 tokens" is 20,000; it was read as 2 (trial). Only a whole-number result, not "1e-5" nor
# a name ("fp8e4m3", a hash: letters or digits around it).
_SCIENTIFIC = re.compile(r"(?<![a-z0-9_.])([0-9]{1,6}(?:\.[0-9]{1,6})?)e\+?([0-9]{1,2})(?![a-z0-9_]|\.[0-9])")


def _cn_compound(m: re.Match) -> str:
    lead, unit, tail, tail_unit = m.groups()
    if lead.isdigit() and not tail:
        return m.group(0)  # "2万": the reader's own scale
    value = (int(lead) if lead.isdigit() else _CN_DIGITS[lead]) * _CN_UNITS[unit]
    if tail:
        step = _CN_UNITS[tail_unit] if tail_unit else _CN_UNITS[unit] // 10  # "1万7" is 17,000
        if tail_unit and _CN_UNITS[tail_unit] >= _CN_UNITS[unit]:
            return m.group(0)
        value += (int(tail) if tail.isdigit() else _CN_DIGITS[tail]) * step
    # Kept in the scale it was written in ("1.7万", "3.5千"): rules read by the scale ("no GPU
    # count is written in 万") read "两万 上下文" as 20,000 GPUs when it became "20000" (review).
    scaled = Decimal(value) / _CN_UNITS[unit]
    return f"{scaled.normalize():f}{unit}"


def _scientific(m: re.Match) -> str:
    value = Decimal(m.group(1)) * Decimal(10) ** int(m.group(2))
    return str(int(value)) if value == value.to_integral_value() and value <= MAX_VALUE else m.group(0)


def normalize(text: str) -> str:
    """NFKC (full-width digits and punctuation), one space for any whitespace run, digit runs cut to
    21 digits (still "too large"), ASCII lower-case, Chinese compound numbers and "2e4" as digits.
    Every step is linear and keeps the text's meaning."""
    text = _UPPER_K.sub(r"\1Ki", _WIDE_THOUSANDS.sub(",", text[:MAX_CHARS]).translate(_PUNCT))
    text = unicodedata.normalize("NFKC", text)
    text = _WS.sub(" ", text)
    text = _LONG_DIGITS.sub(lambda m: m.group()[:21], text)
    text = text.translate(_ASCII_LOWER)
    if "万" in text or "千" in text:
        text = _CN_COMPOUND.sub(_cn_compound, text)
    if "e" in text:
        text = _SCIENTIFIC.sub(_scientific, text)
    return _GLUED_TP.sub("tp ", text).strip()


def _read_number(m: re.Match) -> Quantity:
    sign, digits, frac, scale = m.groups()
    digits = digits.replace(",", "")
    scale = scale or ""
    unit, factor = "count", Decimal(1)
    if scale in _SCALES:
        factor = Decimal(_SCALES[scale])
    elif scale in _BYTES:
        unit, factor = "bytes", Decimal(_BYTES[scale])
    elif scale == "%":
        unit, factor = "ratio", Decimal("0.01")
    elif scale in ("x", "×"):
        unit = "times"
    elif scale == "b":
        unit = "params"
    problem = ""
    value: Decimal | None = None
    if len(digits) > 16:
        problem = "too_large"
    else:
        try:
            value = Decimal(digits + (frac or "")) * factor
        except InvalidOperation:  # not reachable with the pattern above; kept so a bug never raises
            problem = "too_large"
        if value is not None and value > MAX_VALUE:
            problem, value = "too_large", None
    if sign and value is not None:
        problem = "negative"
        value = -value
    shown = m.group(0).strip()
    if scale == "ki":
        shown = shown[:-2] + "K"  # as written
    return Quantity("", value, unit, shown, m.start(), m.end(), scale=scale, problem=problem)


_INPUT_BEFORE = re.compile(r"(?:prompt|input|prefill|输入)s?[\s:：=]*$")
_OUTPUT_AFTER = re.compile(r"\s*(?:tokens? )?(?:output|completion|generat|decode|输出)")


def _merge(numbers: list[Quantity], text: str) -> list[Quantity]:
    """Join "2k + 6k" into one sum, "2k-6k" into a range (ambiguous), "64 改成 128" into the new value."""
    out: list[Quantity] = []
    for q in numbers:
        prev = out[-1] if out else None
        gap = text[prev.end:q.start] if prev else ""
        if prev is not None and prev.unit != q.unit and prev.unit == "count" and not prev.scale and q.unit in ("ratio", "bytes") \
                and len(gap) <= 12 and _RANGE_GAP.fullmatch(gap):
            # "80-90%", "16-24 GB": the unit written once after a range is both ends'. Read
            # alone, the 80 of "吃掉 80-90% 的算力" became 80 tokens per request.
            out[-1] = replace(q, start=prev.start, value=None, text=text[prev.start:q.end], problem="range")
            continue
        if prev is None or prev.unit != q.unit or len(gap) > 12:
            out.append(q)
            continue
        joined = text[prev.start:q.end]
        if _SUM_GAP.fullmatch(gap) and _INPUT_BEFORE.search(text, max(0, prev.start - 16), prev.start) \
                and _OUTPUT_AFTER.match(text, q.end):
            out.append(q)  # "avg prompt 1.5k + 500 output": two figures, each with its own word, not one sum
            continue
        if _SUM_GAP.fullmatch(gap) and prev.usable and q.usable:
            out[-1] = replace(prev, value=prev.value + q.value, text=joined, end=q.end, scale=prev.scale or q.scale)
        elif _RANGE_GAP.fullmatch(gap) or (_BETWEEN_AND.fullmatch(gap) and _BETWEEN.search(text, max(0, prev.start - 12), prev.start)):
            out[-1] = replace(prev, value=None, text=joined, end=q.end, problem="range")
        elif _CHANGE_GAP.fullmatch(gap):
            out[-1] = replace(q, start=prev.start, text=joined)
        else:
            out.append(q)
    return out


@dataclass
class _Label:
    start: int
    end: int
    roles: tuple[Role, ...]


def _labels(text: str) -> list[_Label]:
    found = []
    for m in _LABEL_RE.finditer(text):
        index = int(m.lastgroup[1:])
        found.append(_Label(m.start(), m.end(), _LABELS[index][1]))
    return found


def _candidates(numbers: list[Quantity], labels: list[_Label], text: str) -> list[tuple[int, int, int, int]]:
    """(score, number index, label index, role index) for every label a number could belong to:
    the nearest of each category on each side, in the same clause, with no other number between."""
    out = []
    starts = [q.start for q in numbers]
    number_first = _number_first(numbers, labels, text)
    li = 0
    for ni, q in enumerate(numbers):
        prev_end = numbers[ni - 1].end if ni else 0
        next_start = starts[ni + 1] if ni + 1 < len(numbers) else len(text)
        while li < len(labels) and labels[li].end <= q.start - PRE_GAP - 40:
            li += 1
        seen: set[tuple[str, str]] = set()
        j = li
        left = []
        while j < len(labels) and labels[j].end <= q.start:
            left.append(j)
            j += 1
        for j in reversed(left):  # nearest first
            lab = labels[j]
            gap = text[lab.end:q.start]
            if lab.end < prev_end or len(gap) > PRE_GAP or _SEPARATOR.search(gap) and not (
                    _OPENING.fullmatch(gap) and _CLOSING.match(text, q.end)):
                break
            for ri, role in enumerate(lab.roles):
                if role.kind == "in_out" and q.unit == "bytes":
                    continue  # "权重一共 131 GiB", "KV cache 一共 30 GB": a total of bytes, not of a request's tokens
                usual = role.canonical in ("pre", "both") and j not in number_first
                if not usual and j != left[-1]:
                    # A label read on its unusual side only right beside the number: in "on A100
                    # max-model-len 32768" the card's GPU count (a number before it) took the 32768.
                    continue
                key = ("pre", role.category, role.kind in WEAK)
                if key in seen:
                    continue
                seen.add(key)
                penalty = (0 if usual else OFF_SIDE_PENALTY) + (WEAK_PENALTY if role.kind in WEAK else 0)
                out.append((len(gap.strip()) + penalty, ni, j, ri))
        k = j
        while k < len(labels) and labels[k].start < q.end:
            k += 1
        while k < len(labels) and labels[k].start <= min(next_start, q.end + CARD_GAP):
            lab = labels[k]
            gap = text[q.end:lab.start]
            if not _joins_its_noun(gap, lab):
                break
            for ri, role in enumerate(lab.roles):
                key = ("post", role.category, role.kind in WEAK)
                if key in seen:
                    continue
                seen.add(key)
                usual = role.canonical in ("post", "both") or k in number_first
                penalty = (0 if usual else OFF_SIDE_PENALTY) + (WEAK_PENALTY if role.kind in WEAK else 0)
                out.append((len(gap.strip()) + penalty, ni, k, ri))
            k += 1
    return sorted(out)


def _joins_its_noun(gap: str, label: _Label) -> bool:
    """Whether the text between a number and a label after it lets the label name the number:
    a counter word ("17131 个 block"), or a card's maker and line ("4x RTX 4090")."""
    if _CARD_FILLER.fullmatch(gap) and any(r.kind == "gpus" for r in label.roles):
        return True
    return len(gap) <= POST_GAP and (bool(_POST_FILLER.fullmatch(gap)) or not gap.strip())


def _number_first(numbers: list[Quantity], labels: list[_Label], text: str) -> set[int]:
    """Labels of a pair written number-first ("4k 输入 1k 输出", "4k input 1k output"): each
    sits right after a number and the second has none after it, so both belong to the number
    before them, although "输入"/"input" usually comes before its number ("输入 4k")."""
    def adjacent(a: int, b: int) -> bool:
        return a <= b and not text[a:b].strip()

    def joined(a: int, b: int) -> bool:  # "4k input + 1k output", "4k input and 1k output"
        return a <= b and bool(_PAIR_JOIN.fullmatch(text[a:b]))

    def number_between(a: int, b: int) -> bool:
        return any(joined(a, q.start) and adjacent(q.end, b) for q in numbers)

    out: set[int] = set()
    for j in range(len(labels) - 1):
        first, second = labels[j], labels[j + 1]
        if not (any(r.category == MOD for r in first.roles) and any(r.category == MOD for r in second.roles)):
            continue
        before = any(adjacent(q.end, first.start) for q in numbers)
        after_second = any(adjacent(second.end, q.start) for q in numbers)
        if before and number_between(first.end, second.start) and not after_second:
            out |= {j, j + 1}
    return out


_PAIR_JOIN = re.compile(r" ?(?:\+|and|plus|&|,|和|与|及|跟|加上?)? ?")
_TOKEN_MODS = {"input": "input_tokens", "output": "output_tokens", "in_out": "tokens_per_request",
               "per_request": "tokens_per_request", "max_model_len": "max_model_len", "kv_cache_tokens": "kv_cache_tokens"}
_COUNT_NOUNS = {"num_blocks": "num_blocks", "sessions": "sessions", "num_layers": "num_layers",
                "num_kv_heads": "num_kv_heads", "num_attention_heads": "num_attention_heads"}


def _resolve(q: Quantity, name: str, mod: str, noun: str) -> tuple[str, str]:
    """(label, unit) from the labels a number got: a GPU noun wins, then a name, then the noun,
    refined by the modifier for tokens and bytes."""
    unit = "bytes" if noun == "bytes" and q.unit == "count" else q.unit
    if unit == "params" or (noun == "ignore" or name == "ignore"):
        return "", unit
    if noun == "gpus" and unit != "ratio":  # "90% 的 GPU 算力" is a share of the GPU, not a count of them
        return ("gpu_memory" if unit == "bytes" else "gpu_count"), unit
    if name == "utilization_loose":
        return ("gpu_memory_utilization", "ratio") if unit in ("count", "ratio") else ("", unit)
    if name:
        return name, unit
    if noun == "kv_bytes_per_token" or (unit == "bytes" and mod == "per_token"):
        return "kv_bytes_per_token", "bytes"
    if unit == "bytes":
        return {"gpu_memory": "gpu_memory", "gpu_size": "gpu_memory", "weights": "weights", "kv_cache_memory": "kv_cache_memory",
                "kv_cache_tokens": "kv_cache_memory"}.get(mod, ""), unit
    if unit == "ratio":
        return ("gpu_memory_utilization" if mod == "gpu_memory" else ""), unit
    if unit == "times":
        return "", unit
    if noun in _COUNT_NOUNS:
        return _COUNT_NOUNS[noun], unit
    if mod == "kv_cache_tokens":  # "KV cache 458752" could be tokens or bytes; only "… tokens" is read
        return ("kv_cache_tokens" if noun in ("tokens", "tokens_per_request") else ""), unit
    if mod in _TOKEN_MODS and noun in ("tokens", "tokens_per_request", ""):
        return _TOKEN_MODS[mod], unit
    if noun in ("tokens_per_request", "input_tokens", "output_tokens"):
        return noun, unit
    if noun == "tokens":
        return "tokens", unit  # tokens of no stated kind; the router decides whether that is enough
    return "", unit


def _clause(text: str, at: int) -> str:
    """The clause of `text` around position `at` (between separators)."""
    begin = max((m.end() for m in _SEPARATOR.finditer(text, 0, at)), default=0)
    end = next((m.start() for m in _SEPARATOR.finditer(text, at)), len(text))
    return text[begin:end]


_BYTES_MODS = frozenset({"gpu_memory", "gpu_size", "weights", "kv_cache_memory"})


def _bind(numbers: list[Quantity], labels: list[_Label], text: str) -> list[Quantity]:
    slots: list[dict[str, str]] = [{} for _ in numbers]
    used: set[tuple[int, int]] = set()
    for _, ni, li, ri in _candidates(numbers, labels, text):
        role = labels[li].roles[ri]
        category = NOUN if role.category == IGNORE else role.category
        if category in slots[ni] or (li, ri) in used:
            continue
        if role.kind == "utilization_loose" and not (_FRACTION.fullmatch(numbers[ni].text.strip())
                                                      and _RIGHT_BEFORE.fullmatch(text[labels[li].end:numbers[ni].start])
                                                      and not _BUSY.search(_clause(text, labels[li].start))
                                                      and not _BUSY.search(text, numbers[ni].end, numbers[ni].end + 24)):
            continue  # "gpu util 0.92" is the flag's value; "GPU 利用率 100%", "gpu util at 0.92 in nvidia-smi" how busy the card is
        if category in (NAME, NOUN) and (NAME in slots[ni] or NOUN in slots[ni]):
            continue  # a name and a noun both decide what a number is; the nearest one does
        if numbers[ni].unit == "params":
            continue  # a model's size ("Qwen2.5-72B") takes no label: "72b 上下文 32k" left 32k without its 上下文
        if role.kind == "gpus" and numbers[ni].scale in ("k", "ki", "m", "w", "万"):
            continue  # no count of GPUs is written "128k": "要几张H20 才能跑 128k 上下文" sized 128,000 H20s (trial)
        if category == MOD and role.kind in _BYTES_MODS and numbers[ni].unit != "bytes":
            continue  # "需要多少显存 128k 上下文": a memory word says nothing of a count beside it
        slots[ni][category] = role.kind if role.category != IGNORE else "ignore"
        used.add((li, ri))
    out = []
    for q, slot in zip(numbers, slots):
        label, unit = _resolve(q, slot.get(NAME, ""), slot.get(MOD, ""), slot.get(NOUN, ""))
        if (not label and not slot and unit == "count" and q.scale in ("k", "ki") and _RUN_AT.search(text, 0, q.start)
                and _RUN_AT_NEXT.match(text, q.end)):
            label = "max_model_len"
        tail = _SEPARATOR.split(text[q.end:q.end + 32], 1)[0]  # "32000 tokens per request 左右"
        approx = bool(_APPROX.search(text[max(0, q.start - 8):q.start])) or bool(_AFTER_APPROX.search(tail)) or bool(_ODD.match(tail))
        if unit == "bytes" and label in ("", "kv_cache_memory", "gpu_memory") and q.value is not None and q.value < PER_TOKEN_MAX and (
                _PER_TOKEN_AFTER.match(text, q.end) or _PER_TOKEN_BEFORE.search(text[max(0, q.start - 24):q.start])):
            label = "kv_bytes_per_token"
        problem = q.problem
        if (not problem and q.value is not None and unit == "count" and label and label not in FRACTIONAL
                and q.value != q.value.to_integral_value()):
            problem = "not_integer"
        out.append(replace(q, label=label, unit=unit, approximate=approx or q.approximate, problem=problem))
    return out


def _vllm_lines(text: str) -> tuple[str, list[Quantity]]:
    """vLLM's capacity log lines, read exactly; their spans are blanked so nothing binds them twice."""
    found: list[Quantity] = []
    chars = list(text)
    for m in _VLLM_KV_TOKENS.finditer(text):
        found.append(Quantity("kv_cache_tokens", Decimal((m.group(1) or m.group(2)).replace(",", "")), "count", m.group(0), m.start(), m.end()))
        chars[m.start():m.end()] = " " * (m.end() - m.start())
    for m in _VLLM_MAX_CONC.finditer(text):
        found.append(Quantity("max_concurrency_tokens", Decimal(m.group(1).replace(",", "")), "count", m.group(0), m.start(), m.end()))
        found.append(Quantity("max_concurrency_x", Decimal(m.group(2)), "times", m.group(0), m.start(), m.end()))
        chars[m.start():m.end()] = " " * (m.end() - m.start())
    for q in found:
        if q.value is not None and q.value > MAX_VALUE:
            found[found.index(q)] = replace(q, value=None, problem="too_large")
    return "".join(chars), found


def _dtypes(text: str) -> tuple[tuple[str, ...], str | None]:
    kv = _KV_DTYPE.search(text)
    kv_dtype = _DTYPE_NAMES.get(kv.group(1), kv.group(1)) if kv else None
    seen: list[str] = []
    for m in _DTYPE.finditer(text):
        name = _DTYPE_NAMES.get(m.group(1), m.group(1))
        if name not in seen:
            seen.append(name)
    return tuple(seen), (None if kv_dtype == "auto" else kv_dtype)


def _mtp(text: str) -> bool | None:
    if _MTP_OFF.search(text):
        return False
    return True if _MTP_ON.search(text) else None


_NAME_BEFORE = re.compile(r"(?:^|[^a-z0-9])([a-z][a-z0-9]*[a-z])-$")
_UNIT_WORDS = frozenset({"gib", "gb", "mib", "mb", "kib", "kb", "tib", "tb"})


# A model family written with a space before its version ("llama 3 70b", "qwen 2.5 7b").
_FAMILY_BEFORE = re.compile(r"(?:^|[^a-z0-9])(?:" + "|".join(sorted(MODEL_FAMILIES)) + r") ?v?$")


# What follows a model's version: its size ("llama 3 70b") or a variant ("qwen 2.5-instruct").
_SIZE_AFTER = re.compile(r"^(?: ?[0-9]+(?:\.[0-9]+)? ?b\b|-| ?(?:instruct|chat|base|vl|coder)\b)")


def _in_a_name(text: str, m: re.Match) -> bool:
    """A number that is part of a model's name ("llama-3.1-8b", "gpt-4", "llama 3 70b"): it
    read as a value no label claimed, and the answer asked what "3.1" was. A unit before the
    dash is a range ("16gb-32gb"), not a name. After a family name with a space, only a
    version followed by a size or variant is: "qwen 72b" is the size, "glm 2 gpus" a count."""
    before = text[max(0, m.start() - 24):m.start()]
    named = _NAME_BEFORE.search(before)
    if named and named.group(1) not in _UNIT_WORDS:
        return True
    return not m.group(4) and bool(_FAMILY_BEFORE.search(before)) and bool(_SIZE_AFTER.match(text[m.end():m.end() + 16]))


_GPU_MODEL = re.compile(r"[1-5]0[5-9]0")
_GPU_BEFORE = re.compile(r"(?:rtx|gtx|geforce|nvidia|gpu|显卡|卡|张|块|台|用|在|\d ?[x×*]) ?[:：]? ?$")
# An English article or count before it names a card too ("on a 4090", "my 3090"; trial: "could
# not tell what 4090 refers to"), unless a unit follows ("a 3070 token prompt", "one 2080-token request").
_ARTICLE_BEFORE = re.compile(r"\b(?:a|one|my|single) $")
_UNIT_AFTER = re.compile(r"^ ?-? ?(?:tokens?|toks?|seqs?|requests?|reqs?|blocks?|k\b|m\b|mib|gib|mb|gb|ms|s\b|words?|chars?|characters?)")
_GPU_AFTER = re.compile(r"^ ?(?:ti|super|d)\b|^ ?[x×*] ?\d|^ ?(?:[,，、] ?)?(?:每张|每卡|单卡|显存)? ?\d+ ?(?:g|gb|gib)(?![a-z])")
_SETTING_BEFORE = re.compile(r"[a-z_][a-z0-9_-]* ?[:=]? ?$")  # "max_model_len 2080": the number is its value


def _gpu_model(text: str, m: re.Match) -> bool:
    """A consumer card's model number ("单卡 4090 24G", "2 x RTX 3090"): "4090" was read as a
    GPU count, and as a number nobody could place."""
    if m.group(4) or not _GPU_MODEL.fullmatch(m.group(0)):
        return False
    before = text[max(0, m.start() - 24):m.start()]
    if _GPU_BEFORE.search(before[-12:]):
        return True
    if _ARTICLE_BEFORE.search(before[-8:]) and not _UNIT_AFTER.search(text[m.end():m.end() + 12]):
        return True
    return not _SETTING_BEFORE.search(before) and bool(_GPU_AFTER.search(text[m.end():m.end() + 16]))


def extract(text: str) -> Extraction:
    """Every number in `text`, each bound to the parameter it belongs to (or to nothing)."""
    norm = normalize(text)
    scanned, special = _vllm_lines(norm)
    # "5O4,608 tokens" (a letter O for a zero) was read as 5 blocks and 608 tokens, and a
    # figure followed, sure (trial): such a number is named as unreadable, never split.
    garbled = tuple(m.group(0).rstrip(",.") for m in _GARBLED.finditer(scanned))
    if garbled:
        scanned = _GARBLED.sub(lambda m: " " * len(m.group(0)), scanned)
    numbers = _merge([_read_number(m) for m in _NUMBER.finditer(scanned)
                      if not _in_a_name(scanned, m) and not _gpu_model(scanned, m)], scanned)
    bound = _bind(numbers, _labels(scanned), scanned)
    dtypes, kv_dtype = _dtypes(norm)
    quantities = sorted(special + bound, key=lambda q: q.start)
    return Extraction(norm, quantities, dtypes, kv_dtype, _mtp(norm), garbled)
