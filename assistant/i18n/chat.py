"""What a chat adapter (Slack today) says to the people it answers, looked up as "chat.key".

Only words live here; each adapter applies its own markup around them, so a new adapter
reuses these lines as they are.
"""

MESSAGES: dict[str, dict[str, str]] = {
    "empty_question": {
        "zh": "问我 vLLM 或 FastDeploy 的问题吧——中文或英文都可以。",
        "en": "Ask me about a vLLM or FastDeploy problem — in Chinese or English.",
    },
    "cannot_answer": {"zh": "抱歉，无法回答：{message}", "en": "Sorry, I could not answer: {message}"},
    "answer_failed": {
        "zh": "出了点问题，详情见服务器日志",
        "en": "something went wrong; the server log has details",
    },
    "answered_tail_lines": {
        "zh": "消息有 {whole} 字节，超过 {limit} 字节的上限，只按最后 {lines} 行回答；整份日志请用 `ask --log FILE` 诊断",
        "en": "the message is {whole} bytes, over the {limit}-byte limit; answered from its last {lines} lines "
              "(`ask --log FILE` diagnoses a whole log)",
    },
    "answered_head_tail": {
        "zh": "消息有 {whole} 字节，超过 {limit} 字节的上限，只按开头 {head} 行和最后 {lines} 行回答；整份日志请用 `ask --log FILE` 诊断",
        "en": "the message is {whole} bytes, over the {limit}-byte limit; answered from its first {head} and last {lines} lines "
              "(`ask --log FILE` diagnoses a whole log)",
    },
    "answered_tail_chars": {
        "zh": "消息有 {whole} 字节，超过 {limit} 字节的上限，只按最后 {chars} 个字符回答；整份日志请用 `ask --log FILE` 诊断",
        "en": "the message is {whole} bytes, over the {limit}-byte limit; answered from its last {chars} characters "
              "(`ask --log FILE` diagnoses a whole log)",
    },
    "post_failed": {
        "zh": "抱歉，答案没能发出来（Slack 返回 {error}）。请稍后再问一次。",
        "en": "Sorry, the answer could not be posted (Slack said {error}). Please ask again in a moment.",
    },
    "thread_unread": {
        "zh": "没能读取这个话题串的前文，只按这条消息回答",
        "en": "could not read the thread's earlier messages; answered this message alone",
    },
    "thanks_up": {"zh": "谢谢反馈！", "en": "Thanks for the feedback!"},
    "thanks_down": {"zh": "谢谢，已记下，维护者会看到。", "en": "Thanks — noted for the maintainers."},
    "feedback_not_saved": {"zh": "抱歉，这条反馈没能保存。", "en": "Sorry, that feedback could not be saved."},
}
