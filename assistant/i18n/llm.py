"""What the LLM is told: its instructions per answer language, the note under passages that may not answer,
and what is said when the LLM finds that they do not."""

MESSAGES = {
    'system_prompt': {
        "zh": '你是大模型推理服务（vLLM、FastDeploy）的值班助手。只能依据下面编号的知识库段落和你调用的工具结果回答工程师的问题。用中文回答。在句子后用 [1]、[2] 标注所依据的段落。先说最可能的原因，再给出解决办法（参数、环境变量、命令照原样写出），最后说明接下来要检查什么。需要实时信息（GPU、主机限制、服务端点、日志）或计算时调用工具。如果段落和工具都不足以回答这个问题，第一行只写 [NOT IN KB]，然后说明这些段落讲了什么、缺了什么，不要猜解决办法。',
        "en": "You are an on-call assistant for LLM inference servers (vLLM, FastDeploy). Answer the engineer's question using ONLY the numbered passages from the troubleshooting knowledge base and the results of tools you call. Answer in English. Cite passages as [1], [2] right after the sentences they support. Give the likely cause, then the fix with flags, environment variables and commands copied exactly, then what to check next. Use the tools for live facts (GPUs, host limits, a serving endpoint, a log) and for any arithmetic. If the passages and tools do not cover the question, make the first line exactly [NOT IN KB], then say what the passages do cover and what is missing; do not guess a fix.",
    },
    'judged_not_covered': {
        "zh": '模型读了知识库中最接近的段落，判断它们回答不了这个问题。',
        "en": 'The model read the closest passages in the knowledge base and found they do not answer this question.',
    },
    'dropped_uncited': {
        "zh": '删去了模型回答里 {n} 句只引用了不存在段落的话（它们没有知识库依据）',
        "en": 'removed {n} statement(s) of the LLM answer whose only citations point at no passage (nothing in the KB backs them)',
    },
    'dropped_invented': {
        "zh": '删去了模型回答里 {n} 句话：其中的 {names} 在知识库段落和你的问题里都没有出现（没有依据）',
        "en": 'removed {n} statement(s) of the LLM answer naming {names}, which neither the KB passages nor your question contain',
    },
    'dropped_invented_figures': {
        "zh": '删去了模型回答里 {n} 句话：其中的数字 {names} 在计算结果、知识库段落和你的问题里都没有（没有依据）',
        "en": 'removed {n} statement(s) of the LLM answer stating {names}, a figure that neither the calculation, the KB passages nor your question gives',
    },
    'invented_figures_shown': {
        "zh": '上面的回答里的数字 {names} 在计算结果、知识库段落和你的问题里都没有，没有依据，请勿采用',
        "en": 'the answer above states {names}, a figure that neither the calculation, the KB passages nor your question gives: nothing backs it; do not use it',
    },
    'invented_shown': {
        "zh": '上面的回答提到了 {names}，知识库段落和你的问题里都没有，没有依据，请勿照做',
        "en": 'the answer above names {names}, which neither the KB passages nor your question contain: nothing backs it; do not act on it',
    },
    'uncited_shown': {
        "zh": '流式输出里有 {n} 句只引用了不存在的段落，没有知识库依据，请勿照做',
        "en": '{n} streamed statement(s) cite only passages that do not exist: nothing in the KB backs them; do not act on them',
    },
    'fallback_not_configured': {
        "zh": '没有配置大模型（设置 ASSISTANT_LLM_BASE_URL），以下直接引用知识库',
        "en": 'no LLM is configured (set ASSISTANT_LLM_BASE_URL); answered from the KB',
    },
    'fallback_not_grounded': {
        "zh": '知识库里没有这个问题的内容，所以没有让大模型去猜',
        "en": 'the KB has nothing on this question, so the LLM was not asked to guess',
    },
    'fallback_failed': {
        "zh": '大模型调用失败（{reason}），已改用知识库回答',
        "en": '{reason}; answered from the KB instead',
    },
    'stream_abandoned': {
        "zh": '——大模型回答到一半就停了，上面没写完的内容不要采用；下面是知识库的回答——',
        "en": '-- The LLM stopped mid-answer: do not act on the unfinished text above. The KB answer follows. --',
    },
    'no_cover': {
        "zh": '（以上是知识库中最接近的段落，未必能回答这个问题。）',
        "en": '(The passages above are the closest the KB has; they may not answer the question.)',
    },
}


# Why an LLM call failed (llm.py's messages, as regular expressions) → the Chinese words for a
# Chinese answer's note: "大模型调用失败（the LLM is unreachable）" read half in English.
REASONS_ZH: tuple[tuple[str, str], ...] = (
    (r"the LLM did not answer in time \(nothing within (\S+) s\)", r"大模型没有及时响应（\1 秒内没有任何输出）"),
    (r"the LLM did not answer in time", "大模型没有及时响应"),
    (r"the LLM is unreachable", "连不上大模型"),
    (r"the LLM returned HTTP (\d+)", r"大模型返回 HTTP \1"),
    (r"the LLM's reply could not be used", "大模型的回复无法使用"),
    (r"the LLM serves no model", "大模型服务上没有模型"),
    (r"the LLM returned an empty answer", "大模型返回了空回答"),
    (r"the LLM returned unreadable text", "大模型返回了无法阅读的文字"),
    (r"the LLM answer repeats itself", "大模型的回答在重复自己"),
    (r"the LLM echoed its prompt", "大模型把提示原样返回了"),
    (r"the LLM gave no answer \(it said it does not know\)", "大模型没有给出回答（说不知道）"),
    (r"the LLM answer cites no passage", "大模型的回答没有引用任何知识库段落"),
    (r"the LLM kept calling tools and never answered", "大模型一直在调用工具，没有给出回答"),
    (r"the LLM answered in English, not the asker's language", "大模型用英文回答了中文问题"),
    (r"the LLM answered in Chinese, not the asker's language", "大模型用中文回答了英文问题"),
    (r"the LLM did not finish within (\S+) s", r"大模型 \1 秒内没有答完"),
    (r"the LLM sent a malformed response", "大模型的响应格式有误"),
    (r"the LLM's answer was cut off before it finished", "大模型的回答没说完就断了"),
    (r"the LLM's answer ran to (\S+) characters", r"大模型的回答长达 \1 个字符"),
    (r"the LLM's response was not an OpenAI-compatible stream.*", "大模型的响应不是 OpenAI 兼容的流"),
    (r"the openai package is missing", "缺少 openai 包"),
    (r"the LLM base URL \(llm_base_url / ASSISTANT_LLM_BASE_URL\) is not an http\(s\) URL",
     "大模型地址（llm_base_url / ASSISTANT_LLM_BASE_URL）不是 http(s) 地址"),
)

