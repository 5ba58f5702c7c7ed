"""A small zh↔en glossary of LLM-serving words, for keyword search across languages.

The dense model matches a Chinese question to an English passage, but only roughly; BM25
sees no shared word at all, so an English-only doc tree answers Chinese questions far worse
than a bilingual one. For documents that have no version in the question's language,
retrieval adds the other language's words for the domain terms the question uses (显存 →
"gpu memory vram"). It is a vocabulary of the field, not of any KB: nothing here names an
article, and a KB in both languages is searched as before.
"""

from __future__ import annotations

import re
from functools import lru_cache

# (Chinese words, English words): each row one concept. Both sides are matched in questions
# (Chinese as substrings, English as whole words) and added to the other side's query.
TERMS: tuple[tuple[str, str], ...] = (
    ("显存", "gpu memory vram"),
    ("内存", "memory ram"),
    ("卡住 卡死 卡在 夯住 无响应 没反应 不返回 一直等", "hang stuck hangs freeze"),
    ("超时", "timeout"),
    ("报错 错误", "error"),
    ("崩溃 挂掉 挂了 闪退", "crash crashed"),
    ("退出", "exit exits"),
    ("重启", "restart restarted"),
    ("启动 拉起 起服务", "start startup launch"),
    ("加载", "load loading"),
    ("下载", "download"),
    ("镜像", "image mirror"),
    ("权重", "weights checkpoint"),
    ("量化", "quantization quantized"),
    ("并发 同时处理 同时响应 同时回答 并行处理", "concurrency concurrent parallel"),
    ("吞吐", "throughput"),
    ("延迟 时延", "latency"),
    ("首字 首token", "first token ttft"),
    ("请求", "request requests"),
    ("排队 队列", "queue queued waiting"),
    ("批处理 批次 批量", "batch batching"),
    ("多卡", "multi gpu tensor parallel"),
    ("多机 多节点", "multi node distributed"),
    ("单卡", "single gpu"),
    ("张量并行", "tensor parallel"),
    ("流水线并行", "pipeline parallel"),
    ("专家并行", "expert parallel"),
    ("数据并行", "data parallel"),
    ("编译", "compile build"),
    ("源码", "source"),
    ("安装", "install installation"),
    ("环境变量", "environment variable"),
    ("参数", "parameter argument option"),
    ("配置", "config configuration"),
    ("日志", "log logs logging"),
    ("调试 排查", "debug troubleshoot"),
    ("性能", "performance"),
    ("变慢 很慢 太慢 速度", "slow speed"),
    ("长文本 长上下文", "long context"),
    ("上下文长度", "context length"),
    ("输出", "output"),
    ("输入", "input prompt"),
    ("采样", "sampling"),
    ("温度", "temperature"),
    ("种子", "seed"),
    ("复现 可复现 确定性", "reproducible reproducibility deterministic"),
    ("不一致 不稳定 波动 不确定性", "nondeterministic inconsistent"),
    ("根因 根本原因", "root cause"),  # a postmortem's "Root cause"
    ("时间线 时间轴 故障经过 事故经过 事件经过 故障的经过 事故的经过 事件的经过", "timeline"),  # a postmortem's account of what happened, hour by hour
    # Outputs that differ (between runs, with and without concurrency): English docs say
    # "vary", "different", "differences". Not 不同, which mostly means "another" (不同的模型).
    ("不一样 不相同 有差异 差异 有差别", "differ differs different difference differences vary varies variation"),
    ("思考模式 推理模式 深度思考 推理模型", "thinking reasoning"),
    ("工具调用 函数调用", "tool calling function calling"),
    ("结构化输出", "structured output"),
    ("聊天模板 对话模板", "chat template"),
    ("多模态", "multimodal"),
    ("图片 图像", "image"),
    ("视频", "video"),
    ("嵌入 向量化 向量模型", "embedding embeddings"),
    ("分词器", "tokenizer"),
    ("前缀缓存", "prefix caching"),
    ("预填充", "prefill"),
    ("分块", "chunked"),
    ("解码", "decode decoding"),
    ("投机解码 推测解码", "speculative decoding"),
    ("抢占", "preemption preempted"),
    ("显存不足 爆显存 显存溢出", "out of memory oom"),
    ("共享内存", "shared memory shm"),
    ("容器", "container docker"),
    ("集群", "cluster"),
    ("节点", "node"),
    ("端口", "port"),
    ("网络", "network"),
    ("代理", "proxy"),
    ("证书", "certificate"),
    ("鉴权 认证", "authentication"),
    ("密钥", "key secret"),
    ("匿名", "anonymous"),
    ("使用数据 使用统计 遥测", "usage stats telemetry"),
    ("上报", "report reporting"),
    ("关闭 禁用 关掉", "disable"),
    ("开启 启用", "enable"),
    ("默认", "default"),
    ("释放", "free release"),
    ("休眠 睡眠", "sleep"),
    ("唤醒", "wake"),
    ("升级", "upgrade"),
    ("版本", "version"),
    ("兼容", "compatible compatibility"),
    ("驱动", "driver"),
    ("精度", "precision dtype"),
    ("半精度", "half fp16"),
    ("服务端", "server"),
    ("接口", "api endpoint"),
    ("客户端", "client"),
    ("流式", "streaming stream"),
    ("监控 指标", "metrics monitoring"),
    ("告警", "alert"),
    ("健康检查 探针 存活", "health probe liveness readiness"),
    ("缓存", "cache"),
    ("清理 清空", "clear clean"),
    ("磁盘 硬盘", "disk"),
    ("路径", "path"),
    ("权限", "permission"),
    ("找不到 不存在", "not found missing"),
    ("失败", "failed failure"),
    ("限制", "limit"),
    ("并行", "parallel"),
    ("线程", "thread threads"),
    ("进程", "process"),
    ("注意力", "attention"),
    ("显卡", "gpu"),
    ("负载均衡", "load balancing"),
    ("离线推理", "offline inference"),
    ("推理", "inference"),
    ("部署", "deploy deployment"),
    # General software and operations words: an English-only doc tree is asked about its
    # installation, security, data, networking and tuning in these words too.
    ("要求", "requirement requirements"),
    ("不支持", "not supported unsupported"),
    ("支持", "support supported"),
    ("宿主机 主机", "host"),
    ("核数 核心数 多核", "cores"),
    ("利用率 使用率 占用率", "utilization usage"),
    ("显存占用", "gpu memory usage"),
    ("占用", "usage used"),
    ("卸载", "offload uninstall"),
    ("分离", "disaggregated separate"),
    ("调度器 调度", "scheduler scheduling"),
    ("分流", "routing load balancing"),
    ("入口", "entrypoint"),
    ("防火墙", "firewall"),
    ("安全", "security"),
    ("漏洞", "vulnerability"),
    ("隐私", "privacy"),
    ("审计", "audit"),
    ("合规", "compliance"),
    ("字段", "field fields"),
    ("数据", "data"),
    ("格式", "format"),
    ("模板", "template"),
    ("文件", "file files"),
    ("目录 文件夹", "directory folder"),
    ("挂载", "mount volume"),
    ("共享文件系统 网络存储 网络盘", "shared filesystem network storage nfs"),
    ("本地", "local"),
    ("远程", "remote"),
    ("内网", "internal network"),
    ("外网 联网 上网 公网", "internet"),
    ("离线", "offline"),
    ("上传", "upload"),
    ("依赖", "dependency dependencies"),
    ("预编译", "precompiled prebuilt wheel"),
    ("构建 打包", "build"),
    ("代码", "code"),
    ("脚本", "script"),
    ("命令行", "command line cli"),
    ("命令", "command"),
    ("性能分析", "profiling profiler"),
    ("压测 压力测试 基准测试 性能测试", "benchmark"),
    ("准确率", "accuracy"),
    ("重复", "repetition repeated"),
    ("截断", "truncated truncation"),
    ("长度", "length"),
    ("最大", "max maximum"),
    ("数量 个数", "number count"),
    ("大小", "size"),
    ("序列", "sequence sequences"),
    ("词表", "vocabulary vocab"),
    ("泄漏 泄露", "leak"),
    ("碎片", "fragmentation"),
    ("分配", "allocate allocation"),
    ("预留", "reserve reserved"),
    ("比例", "ratio fraction"),
    ("上限", "limit maximum"),
    ("限流", "rate limit"),
    ("超出 超过", "exceeds exceeded"),
    ("不生效 没生效 失效 没效果", "ignored no effect"),
    ("忽略", "ignored ignore"),
    ("覆盖", "override"),
    ("自定义", "custom"),
    ("插件", "plugin"),
    ("硬件", "hardware"),
    ("架构", "architecture"),
    ("算子", "kernel operator"),
    ("通信", "communication"),
    ("带宽", "bandwidth"),
    ("拓扑", "topology"),
    ("反向代理", "reverse proxy"),
    ("路由", "routing router"),
    ("域名", "domain dns"),
    ("地址", "address"),
    ("网卡", "network interface"),
    ("头节点 主节点", "head node"),
    ("工作节点", "worker"),
    ("分布式", "distributed"),
    ("副本", "replica replicas"),
    ("实例", "instance"),
    ("微调", "fine-tuning finetune"),
    ("训练", "training"),
    ("适配器", "adapter"),
    ("合并", "merge merged"),
    ("混合精度", "mixed precision"),
    ("分类", "classification"),
    ("生成", "generate generation"),
    ("补全", "completion completions"),
    ("对话 聊天", "chat"),
    ("多轮", "multi-turn"),
    ("提示词", "prompt"),
    ("系统提示", "system prompt"),
    ("停止词", "stop"),
    ("随机", "random"),
    ("返回", "return response"),
    ("响应", "response"),
    ("状态码", "status code"),
    ("连接", "connection connect"),
    ("重试", "retry"),
    ("异步", "async asynchronous"),
    ("阻塞", "blocking blocked"),
    ("死锁", "deadlock"),
    ("后台", "background"),
    ("操作系统", "operating system"),
    ("文档", "docs documentation"),
    ("示例 例子", "example examples"),
    ("官方", "official"),
    ("警告", "warning"),
    ("开销", "overhead"),
    ("加速", "speedup accelerate"),
    ("优化", "optimization optimize"),
    ("调优", "tuning tune"),
    ("瓶颈", "bottleneck"),
    ("空闲", "idle"),
    # Everyday software words: "浏览器访问不了，端口已经映射了" shared only 端口 and 浏览器 with the
    # page on reaching a web UI. No 切分 or 链接: read first, they took 分块's 分 and 接口's 接, and
    # 链接 is often written for 连接; no 服务器, 环境, 列表: they cost English questions their
    # mappings ("server" → 服务端, "environment variables" → 环境变量; dev trees, review).
    ("初始化", "init initialize initialization"),
    ("引擎", "engine"),
    ("映射", "mapping"),
    ("访问", "access"),
    ("手动", "manual manually"),
    ("复制 拷贝", "copy"),
    ("控制台", "console"),
    # A self-hosted service's own words: accounts, its data, its web UI and its stores. Teams
    # run RAG and chat platforms beside their models, with English-only docs asked in Chinese
    # ("自己注册的账号密码忘了，怎么重置" of a page on resetting user passwords), and Chinese-only
    # docs asked in English. No 前端/后端: read left to right they took 端口 from "升级后端口变了"
    # (review).
    ("密码", "password"),
    ("账号 账户", "account"),
    ("用户名", "username"),
    ("用户", "user users"),
    ("管理员", "admin administrator"),
    ("登录 登陆", "login"),
    ("注册", "register registration signup"),
    ("重置", "reset"),
    ("忘记 忘了", "forgot forgotten"),
    ("备份", "backup"),
    ("恢复", "restore recover recovery"),
    ("迁移", "migrate migration"),
    ("邮件 邮箱", "email smtp"),
    ("级别", "level"),
    ("知识库", "knowledge base"),
    ("向量库 向量数据库 向量存储", "vector vectors"),
    ("解析", "parse parsing parser"),
    ("索引", "index indexing"),
    ("检索 召回", "retrieval retrieve"),
    ("重排序 重排模型", "rerank reranker reranking"),  # not a bare 重排: 请求被重排队 is a queue (review)
    ("切片 分段", "chunk chunks chunking"),
    ("拉取", "pull"),
    ("不健康", "unhealthy"),
    ("页面 界面", "page ui"),
    ("浏览器", "browser"),
    ("跨域", "cors"),
    ("数据库", "database"),
    ("会话", "session conversation"),
    ("水位", "watermark"),
    # A team's runbook words: release, rollback, scaling, alerts and incidents, asked of a
    # runbook written in the other language ("网关报 502" of a page titled "Gateway returns 502").
    ("网关", "gateway"),
    ("回滚 回退", "rollback revert"),
    ("金丝雀 灰度", "canary"),
    ("发布", "rollout"),
    ("下线 摘流", "drain decommission"),
    # Scaling down said apart: "缩容太慢" asks about scaling down, and a page's scale-down
    # settings (a cooldown window, a downscale delay) say so in those words; 扩容 keeps the
    # general words, so "scale"/"scaling" in an English question still map back to it. No bare
    # "up"/"down": particles would map English questions back to these rows. 压缩 is read
    # first, so 压缩容量 has no 缩容 in it.
    ("扩容 扩缩容 自动扩缩 弹性伸缩 伸缩", "scaling scale autoscaling scale-up upscale"),
    ("缩容", "scale-down downscale scaledown"),
    ("压缩", "compress compression compressed"),
    ("阈值", "threshold"),
    ("值班", "oncall"),
    ("故障 事故", "incident outage"),
    ("复盘", "postmortem"),
    ("升级处理 上报处理", "escalation escalate"),
    ("电话", "phone"),
    ("负责人", "owner"),
    ("流量", "traffic"),
    ("切流 切换", "switch failover"),
    ("申请", "request apply"),
    ("配额 额度", "quota"),
    ("审批", "approval approve"),
    ("紧急", "emergency urgent"),
    ("工单", "ticket"),
    ("周末", "weekend weekends"),
    ("保留 留存", "retention retain"),
    ("归档", "archive archived"),
    ("交接", "handoff handover"),
    # Routing, caching and safety words of gateways and routers in front of the servers.
    ("语义", "semantic"),
    ("命中率", "hit rate"),
    ("命中", "hit hits"),
    ("未命中", "miss misses"),
    ("相似度", "similarity"),
    ("误判 误报 误拦", "false positive positives"),
    ("拦截", "block blocked"),
    ("放行", "allow allowlist"),
    ("过滤 过滤器", "filter"),
    ("跳过", "skip"),
    ("上游", "upstream"),
    ("下游", "downstream"),
    ("分数 得分 评分", "score"),
    ("分类器", "classifier"),
    ("匹配", "match matches"),
    ("规则", "rule rules"),
    ("策略", "policy strategy"),
    ("请求头 响应头 头部", "header headers"),
    ("单点登录", "sso single sign-on"),
    ("命名空间", "namespace"),
    ("存储", "storage"),
    ("持久化", "persistent persistence"),
    ("转发", "forward forwarding"),
    ("重定向", "redirect"),
    ("越狱", "jailbreak"),
    ("敏感信息 隐私信息", "pii"),
)

_EN_WORD = re.compile(r"[a-z][a-z0-9]+")
# Words of an English phrase that say nothing alone: "of" and "out" mapped every English
# question with "of" in it to 显存不足 (from "out of memory"), "first" to 首字, "long" to 长文本.
# They map back only inside their phrase (two words of a row's English side in a row).
_PHRASE_PARTS = frozenset({"of", "out", "no", "first", "line", "found", "root", "head", "long", "single", "mixed", "half", "base",
                           "operating", "function", "tool", "internal", "status", "rate", "effect", "reverse", "calling"})
# Words that do not make a phrase: "out of" and "of memory" are no "out of memory" ("index out
# of range", "80GB of memory", review); a phrase needs two words besides these.
_GLUE = frozenset({"of", "no", "in", "on", "to", "the", "a", "an", "and", "or", "not"})


@lru_cache(maxsize=1)
def _tables() -> tuple[dict[str, list[tuple[str, str]]], dict[str, str]]:
    # Chinese terms by their first character, longest first (显存不足 before 显存), so a
    # position in a long pasted question is checked against a handful of terms, not all.
    zh_to_en: dict[str, list[tuple[str, str]]] = {}
    for zhs, en in TERMS:
        for zh in zhs.split():
            zh_to_en.setdefault(zh[0], []).append((zh, en))
    for terms in zh_to_en.values():
        terms.sort(key=lambda pair: -len(pair[0]))
    # An English word maps back only when one concept uses it ("gpu" is in several, so none),
    # and to all of that concept's Chinese words: a Chinese page says one of them, and which
    # one is the writer's choice ("canary" reached only 金丝雀, never a team FAQ's 灰度发布).
    rows: dict[str, list[str]] = {}
    for zhs, en in TERMS:
        for word in set(en.split()):
            rows.setdefault(word, []).append(zhs)
    en_to_zh = {word: zh[0] for word, zh in rows.items() if len(zh) == 1 and word not in _PHRASE_PARTS}
    phrases: dict[str, list[str]] = {}
    for zhs, en in TERMS:
        for phrase in set(_phrases(en.split())):
            phrases.setdefault(phrase, []).append(zhs)
    en_to_zh.update({phrase: zh[0] for phrase, zh in phrases.items() if len(zh) == 1})
    return zh_to_en, en_to_zh


def _phrases(words: list[str]) -> list[str]:
    """Runs of two or three words with at least two that are not glue ("out of memory", "root cause")."""
    runs = [words[i:i + n] for n in (2, 3) for i in range(len(words) - n + 1)]
    return [" ".join(run) for run in runs if sum(w not in _GLUE for w in run) >= 2]


@lru_cache(maxsize=1)
def _zh_rows() -> dict[str, tuple[str, ...]]:
    return {word: tuple(zhs.split()) for zhs, _ in TERMS for word in zhs.split()}


# Words every error question says (报错 "it reports an error"): swapped for a page's 错误, they
# made that page match any error question, and two out-of-scope ones were answered (dev trees).
_SAID_OF_ANY_ERROR = frozenset({"报错", "错误"})


def kb_words(word: str, doc_freq: dict[str, int]) -> list[str]:
    """The word a KB writes for a Chinese term it never uses: 挂了 where its pages say 挂掉,
    起服务 where they say 启动. A question in the KB's own language met only the writer's
    choice of synonym, which the dense model sees through and BM25 does not. Only a synonym
    the KB has as a word of its own stands in, the one it uses most: taken as its segmenter's
    pieces, 向量化 (an embedding) became 量化 (quantization) and a refusal an answer (review).
    A word the KB uses, or one the glossary lacks, is kept."""
    if doc_freq.get(word, 0) > 0 or word not in _zh_rows() or word in _SAID_OF_ANY_ERROR:
        return [word]
    used = max((doc_freq.get(w, 0), w) for w in _zh_rows()[word])
    return [used[1]] if used[0] > 0 else [word]


def translate(question: str, lang: str) -> list[str]:
    """The other language's words for the domain terms in `question` (zh → en or en → zh),
    each once; empty when the question uses none."""
    zh_to_en, en_to_zh = _tables()
    found: list[str] = []
    if lang == "zh":
        # Left to right, the longest term at each position: 单卡在跑 is 单卡 + 在跑, not 单 + 卡在.
        text = question.lower()
        i = 0
        while i < len(text):
            hit = next(((zh, en) for zh, en in zh_to_en.get(text[i], ()) if text.startswith(zh, i)), None)
            if hit is None:
                i += 1
                continue
            found.append(hit[1])
            i += len(hit[0])
    else:
        words = _EN_WORD.findall(question.lower())
        found = [en_to_zh[w] for w in (*words, *_phrases(words)) if w in en_to_zh]
    return list(dict.fromkeys(found))
