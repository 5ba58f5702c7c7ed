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
    "thanks_up": {"zh": "谢谢反馈！", "en": "Thanks for the feedback!"},
    "thanks_down": {"zh": "谢谢，已记下，维护者会看到。", "en": "Thanks — noted for the maintainers."},
    "feedback_not_saved": {"zh": "抱歉，这条反馈没能保存。", "en": "Sorry, that feedback could not be saved."},
}
