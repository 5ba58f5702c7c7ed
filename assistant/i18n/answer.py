"""Answer texts: the labels of an extractive answer, refusals, log findings, sources."""

MESSAGES = {
    'cause': {
        "zh": '可能原因',
        "en": 'Likely cause',
    },
    'fix': {
        "zh": '解决办法',
        "en": 'Fix',
    },
    'check': {
        "zh": '接下来检查',
        "en": 'Check next',
    },
    'your_line': {
        "zh": '这篇对你提到的这行日志的说明',
        "en": 'What this article says about the log line you name',
    },
    'signs': {
        "zh": '怎么确认',
        "en": 'How to recognise it',
    },
    'also': {
        "zh": '也可能是',
        "en": 'It could also be',
    },
    'tell': {
        "zh": '区分方法',
        "en": 'tell them apart by',
    },
    'your_docs': {
        "zh": '你们自己的文档里',
        "en": 'In your own docs',
    },
    'log_line': {  # the alternative's own telltale line, never a claim about the asker's log (trial: "the log says" read as one)
        "zh": '日志里会有',
        "en": 'its telltale log line:',
    },
    'first_fix': {
        "zh": '先试',
        "en": 'first fix',
    },
    'nothing': {
        "zh": '知识库里没有找到能回答这个问题的内容，我不会去猜一个解决办法。',
        "en": 'I found nothing in the knowledge base that answers this question, so I will not guess a fix.',
    },
    'yours_value': {
        "zh": '（你的：{value}）',
        "en": ' (yours: {value})',
    },
    'yours_step': {
        "zh": '（你的：{value}，同样减半是 {next}）',
        "en": ' (yours: {value}; the same halving step is {next})',
    },
    'yours_low': {
        "zh": '（你的已经是 {value}，这一步不会再降低它）',
        "en": ' (yours is already {value}: this step would not lower it)',
    },
    'weights_first': {
        "zh": '（下面这些设置不会让权重放进你的卡，见上面；等权重放得下之后，它们才有用。）',
        "en": '(None of these makes the weights fit your GPUs, as said above; they help once the weights fit.)',
    },
    'unsure': {
        "zh": '**不一定对症。** 这是知识库里最接近的条目，但未必是你遇到的问题：先对照它说的症状和日志，确认一致再按下面的办法处理。',
        "en": '**Not a sure match.** This is the closest article in the KB, but it may not be your case: check its symptoms and log lines against yours before you apply the fix.',
    },
    'yours_numbers': {"zh": '按你的数字', "en": 'With your numbers'},
    'context_overflow': {
        "zh": '上下文上限 {limit}，消息占 {messages}，所以 `max_tokens` 最多 {limit} − {messages} = {most}（你要的是 {asked}）。',
        "en": 'the context holds {limit} tokens and the messages take {messages}, so `max_tokens` can be at most {limit} − {messages} = {most} (you asked for {asked}).',
    },
    'unsure_tried': {
        "zh": '**不一定对症。** 你已经试过这篇的主要办法：下面其余的办法可能还有用，但你的问题也可能是知识库没写到的其他原因。',
        "en": '**Not a sure match.** You already tried this article\'s main fix: its other fixes below may still help, but your case may have a cause the KB does not cover.',
    },
    'unsure_oom': {
        "zh": '**不一定对症。** 你问的是显存不足（OOM），这一篇却从没讲到显存：它和你的问题只是话题相近，不一定是你的原因。',
        "en": '**Not a sure match.** You ask about running out of memory, which this article never deals with: it shares a subject with your question, not necessarily its cause.',
    },
    'unsure_denied': {
        "zh": '**不一定对症。** 你说没有{what}，而{what}正是下面这一篇讲的现象：它和你的问题只是话题相近，未必是你的原因。',
        "en": '**Not a sure match.** You say there is no {what}, which is the very symptom of the article below: it shares a subject with your question, not necessarily its cause.',
    },
    'unsure_denied_line': {
        "zh": '**不一定对症。** 你说日志里没有这一篇所讲的那行日志：它的原因很可能不是你的原因，下面只作参考。',
        "en": '**Not a sure match.** You say your log lacks the very line this article is about: its cause is likely not yours, so take what follows as a pointer only.',
    },
    'failure_hang': {"zh": '卡住', "en": 'hang'},
    'failure_oom': {"zh": '显存不足（OOM）', "en": 'out-of-memory error'},
    'failure_preempt': {"zh": '抢占', "en": 'preemption'},
    'failure_startup': {"zh": '启动失败', "en": 'failure at start-up'},
    'failure_slow': {"zh": '变慢', "en": 'slowness'},
    'asked_unknown': {
        "zh": '你问到的 {names} 在知识库里没有出现过：下面的内容未必涉及这一点，只能作参考。',
        "en": 'The knowledge base never mentions {names}, which your question asks about: what follows may not cover that.',
    },
    'vague': {
        "zh": '**问题太短，好几篇都对得上。** 最接近的放在前面，其余的列在最后并附区分方法；贴一行日志或说说具体现象（启动时还是运行中）就能确定。',
        "en": '**Several articles fit a question this short.** The closest comes first and the others are listed at the end with how to tell them apart; a log line or what you see (at start-up or while serving) settles it.',
    },
    'unsure_unseen': {
        "zh": '**不一定对症。** 你的问题提到了{words}，知识库里没有讲这方面的条目：下面是最接近的一篇，只管它讲到的那部分；先对照它的症状和日志，确认一致再按它的办法处理。',
        "en": '**Not a sure match.** Your question mentions {words}, and no article in the KB covers that: below is the closest, for the part it does cover; check its symptoms and log lines against yours before you apply the fix.',
    },
    'unsure_unseen_passages': {
        "zh": '**不一定能回答你的问题。** 你的问题提到了{words}，文档里没有讲这方面的内容：以下是最接近的段落，用之前先核对。',
        "en": '**Not a sure match.** Your question mentions {words}, which none of the docs covers: these are the closest passages, so check them before you act on them.',
    },
    'word_quoted': {"zh": '“{word}”', "en": '“{word}”'},
    'word_list_sep': {"zh": '、', "en": ', '},
    'unsure_passages': {
        "zh": '**不一定能回答你的问题。** 以下是文档里最接近的段落，未必正好说到你问的情况，用之前先核对。',
        "en": '**Not a sure match.** These are the closest passages in the docs; they may not answer exactly what you asked, so check them before you act on them.',
    },
    'closest': {
        "zh": '知识库中最接近的条目（大概率不是你要的）',
        "en": 'Closest topics in the KB (probably not what you need)',
    },
    'other_lang': {
        "zh": '（该文章只有英文版本，以下按原文引用。）',
        "en": '(This article exists only in Chinese; quoted as written.)',
    },
    'other_lang_passage': {
        "zh": '（仅有英文原文）',
        "en": '(Only in Chinese; quoted as written.)',
    },
    'other_lang_fuller': {
        "zh": '（这一段英文版比中文版写得多，按英文原文引用）',
        "en": '(The Chinese version of this page says more here than the English one; quoted as written.)',
    },
    'platform': {
        "zh": '最接近的条目 **{title}** {ref} 是针对 {declared} 写的。你用的是 {platform}，其中的解决办法可能不适用甚至是错的，知识库里没有针对 {platform} 的内容。',
        "en": 'The closest article, **{title}** {ref}, is written for {declared}. You are on {platform}, where its fix may not apply or may be wrong, and the KB has nothing specific for {platform}.',
    },
    'platform_only': {
        "zh": '这个知识库的条目是针对 {declared} 写的。你用的是 {platform}，知识库里没有针对 {platform} 的内容，也没有与这个问题相近的条目。',
        "en": "The KB's articles are written for {declared}. You are on {platform}; the KB has nothing specific for {platform}, and no article close to this question.",
    },
    'partial': {
        "zh": '知识库里没有关于 {missing} 的内容。最接近的条目是 **{title}** {ref}，它的解决办法不一定适用于你的情况，所以不把它当作答案。',
        "en": 'The KB has nothing on {missing}. The closest article is **{title}** {ref}; its fixes may not apply to your case, so I will not present them as the answer.',
    },
    'missing': {
        "zh": '知识库里没有关于 {missing} 的内容。',
        "en": 'It has nothing on {missing}.',
    },
    'covers': {
        "zh": '这个知识库（{n} 个主题）覆盖的内容包括：',
        "en": 'This knowledge base ({n} topics) covers, among others:',
    },
    'covers_all': {
        "zh": '这个知识库有 {n} 个主题：',
        "en": 'This knowledge base covers {n} topics:',
    },
    'more': {
        "zh": '- …… 以及另外 {n} 篇',
        "en": '- … and {n} more',
    },
    'add_docs': {
        "zh": '可以用 `assistant ingest PATH` 加入自己的运维文档。',
        "en": 'You can add your own runbooks with `assistant ingest PATH`.',
    },
    'add_docs_kb': {
        "zh": '可以用 `assistant ingest --kb DIR PATH` 往这个知识库里加入更多文档（DIR 是打开这个知识库时用的 --kb 目录）。',
        "en": 'You can add more documents to this KB with `assistant ingest --kb DIR PATH` (DIR: the folder this KB was opened with).',
    },
    'yours': {
        "zh": '你命令行里的相关参数',
        "en": 'From your command line',
    },
    'near_ceiling': {
        "zh": '{flag} 已经接近上限：再调高几乎不给激活和其他进程留显存，容易 CUDA out of memory。先看其他办法',
        "en": '{flag} is near the ceiling already: raising it leaves almost nothing for activations and other processes, '
              'and risks CUDA out of memory. Look at the other fixes first',
    },
    'tried': {
        "zh": '你说已经试过或设过（先看其他办法）',
        "en": 'You said you already tried or set (look at the other fixes first)',
    },
    'continued': {
        "zh": '（续）',
        "en": '(continued)',
    },
    'same_text': {
        "zh": '同样的内容也写在',
        "en": 'The same text is also in',
    },
    'earlier': {
        "zh": '（本节前文）',
        "en": '(earlier in this section)',
    },
    'gap': {
        "zh": '……',
        "en": '…',
    },
    'cut': {
        "zh": '……（其余内容见引用的原文）',
        "en": '… (more in the cited source)',
    },
    'sources': {
        "zh": '来源',
        "en": 'Sources',
    },
    'not_grounded': {
        "zh": '知识库中无依据',
        "en": 'not grounded in the KB',
    },
    'log_title': {
        "zh": '日志发现',
        "en": 'Log findings',
    },
    'log_no_crash': {  # asked why the server crashed, beside a log that shows no crash
        "zh": '**日志里没有崩溃的迹象**：读到的部分没有服务自身的错误，也没有进程退出。如果服务确实挂了，原因在这段日志之外（更早或更晚的日志、系统日志里的 OOM killer，或 `dmesg`）。',
        "en": "**The log shows no crash**: the part read shows no error of the server's own and no process exit. If the server did go down, the cause is outside this log (earlier or later lines, the OOM killer in the system log, or `dmesg`).",
    },
    'log_no_article': {  # a crash in the log that no KB document has a signature for
        "zh": '知识库里没有对应的文章',
        "en": 'no KB article on it',
    },
    'log_empty': {
        "zh": '日志（{log}）是空的，只按问题回答',
        "en": 'the log ({log}) is empty; answering from the question alone',
    },
    'stdin_idle': {
        "zh": 'stdin 读了 {read} 后 {seconds} 秒没有新内容、也没有结束（`-f` 跟随的日志？），按已读到的部分回答；要读完整的日志，去掉 `-f`，或用 `tail -n 2000`',
        "en": 'stdin sent {read} and then nothing for {seconds} s without ending (a followed log, `-f`?); answering from what was read. Drop `-f`, or pipe `tail -n 2000`, to pass a log that ends',
    },
    'stdin_gb18030': {
        "zh": '输入不是 UTF-8，已按 GBK/GB18030 读取',
        "en": 'the input was not UTF-8; it was read as GBK/GB18030',
    },
    'stdin_stray_bytes': {
        "zh": '输入里有 {count} 个字节不是 UTF-8，已替换为 �',
        "en": '{count} byte(s) of the input were not UTF-8 and were replaced with �',
    },
    'stdin_endless': {
        "zh": 'stdin 读了 {read} 还没有结束，只按最后读到的部分回答；请用 `tail -n 2000` 传日志的结尾',
        "en": 'stdin had not ended after {read}; answering from the last part read. Pipe `tail -n 2000 FILE` to pass a log\'s end',
    },
    'log_unread': {
        "zh": '日志文件有 {total}，只读了最后 {read}；更早的行没有扫描（可以先用 grep 找出出错的那段再传进来）',
        "en": 'the log file is {total}; only its last {read} was read and earlier lines were not scanned (grep out the part that failed and pass that)',
    },
    'limit_not_the_cause': {  # the message-size calculation says the asker's limit already holds it
        "zh": '**按上面的数值计算，消息没有超过你的 kernel.msgmax，这篇文章说的原因多半不是你遇到的**；下面只作参考'
              '（如果你的 max_batch 或 top_logprobs 比上面用的大，请写进问题重新计算）。',
        "en": '**With the values above the message fits under your kernel.msgmax, so the cause this article describes is unlikely '
              'to be yours**; it is quoted for reference (if your max_batch or top_logprobs is larger than the values used, '
              'put them in the question to compute again).',
    },
    'computed_alone': {  # a calculation answered, and no article covers the question
        "zh": '知识库里没有讲这个问题的条目；上面的数字只是计算结果，不依赖任何条目。',
        "en": 'No article in the KB covers this; the figure above is the calculation alone, not from an article.',
    },
    'weights_alone': {
        "zh": '知识库里没有和这个问题对得上的条目；上面的数字是按问题里的模型和显卡算出来的，不依赖任何条目。',
        "en": 'No article in the KB matches this closely; the figure above is arithmetic from the model and GPU in the question, not from an article.',
    },
    'japanese': {
        "zh": '日语问题暂不支持：知识库只有中文和英文，这里用英文回答，检索也可能漏掉日语的说法。',
        "en": 'Japanese is not supported: the KB is in Chinese and English, so this answer is in English, and retrieval may miss what was said in Japanese.',
    },
    'log_clean': {
        "zh": '这份日志（{lines} 行）里没有找到知识库认识的故障特征，也没有 ERROR 级别的异常。',
        "en": 'No failure signature the KB knows, and no ERROR-level exception, in this log ({lines} lines).',
    },
    'log_clean_tail': {
        "zh": '这份日志只读了结尾 {lines} 行，其中没有找到知识库认识的故障特征，也没有 ERROR 级别的异常；前面 {before} 行没有读，那里的故障不会显示。',
        "en": 'No failure signature the KB knows, and no ERROR-level exception, in the last {lines} lines of this log; '
              'the {before} lines before them were not read, and a failure there would not show.',
    },
    'log_question': {  # `ask --log FILE` with no question: the log is the question
        "zh": '这份日志说明了什么问题？',
        "en": 'What does this log show is wrong?',
    },
    'log_row': {
        "zh": '- `{signature}` × {count} 次 (第 {line} 行, {severity}) → {article}',
        "en": '- `{signature}` × {count} (line {line}, {severity}) → {article}',
    },
}
