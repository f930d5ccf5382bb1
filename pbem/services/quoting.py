"""What of a reply's text its writer wrote: the lines left when what mail programs add is taken
out (quoted lines, the line introducing the quote, the original pasted on without '>', a
signature), in the shapes of the common mail programs and in the languages they speak.

The table below is ours. The maintained libraries were tried against the corpus of
tests/mail_corpus.py (`python3 bench/mailin_bench.py --corpus --readers`, 418 replies without
an attached file, the same choice of MIME part for each): quotequail found the writer's lines
exactly in 51, mail-parser-reply (which knows 13 languages) in 100, this table in 418; a
library's cut followed by this table read 396 and 417, at fifteen times the CPU. So the table
reads alone. Reading a line at a time against it is linear in the text, whatever the sender
writes. It owns only the words; what counts as an order is pbem.services.turnfile's.

Every pattern is matched against one stripped line (no-break and other odd spaces made plain
spaces first), never over the whole text: no pattern can scan far.
"""

from __future__ import annotations

import re

# The word an attribution line ends with ("On ... Anna <a@b> wrote:"), in the mail programs'
# languages: en, de, es, fr, it, nl, pt, pl, ru, uk, sv/no/da, fi, hu, cs, sk, tr, ja, zh, ko,
# ro, el, ca. A move never ends with one of them and a colon.
WROTE = (r"wrote|writes|schrieb|geschrieben|geschreven|escribió|escribio|a écrit|a ecrit|"
         r"écrit|ha scritto|"
         r"scrisse|schreef|heeft geschreven|escreveu|napisał\(a\)|napisała|napisał|napisal|"
         r"написал\(а\)|написала|написал|пишет|написав|написала|пише|skrev|kirjoitti|írta|"
         r"napsal\(a\)|napsala|napsal|napísal|yazdı|pisze|a scris|έγραψε|va escriure")
# The same in scripts without spaces between words: no word boundary before them.
WROTE_JOINED = r"書きました|のメール|のメッセージ|写道|寫道|작성"
# A line ending so, or ending with an address and a colon ("... <play+x@y.org>:", Gmail in
# Russian and Japanese, Yandex, Mail.ru), introduces a quote.
ATTRIBUTION_END = re.compile(rf"(?:\b|\s|^|\)|>)(?:{WROTE})\s*(?:\(.{{0,60}}\))?\s*[:：]?\s*$|"
                             rf"(?:{WROTE_JOINED})\s*[:：]\s*$|"
                             r">\s*[:：]\s*$|@[\w.-]+\s*[:：]\s*$", re.IGNORECASE)
# Hungarian Gmail puts the date after the word: "Anna <a@b> ezt írta (időpont: ...):".
# So does Finnish Apple Mail ("Anna <a@b> kirjoitti 2.12.2026 kello 10.00:"), Polish
# ("Wiadomość napisana przez Anna <a@b> w dniu ...:") and any line with an address in angle
# brackets that ends with a colon.
ATTRIBUTION_INSIDE = re.compile(r"\bezt írta\b.{0,80}[:：]\s*$|\bskrev\b.{0,120}[:：]\s*$|"
                                r"\bkirjoitti\b.{0,80}[:：]\s*$|^wiadomość napisana przez\b|"
                                r"<[^<>\s]+@[^<>\s]+>.{0,120}[:：]\s*$", re.IGNORECASE)
# How an attribution line begins, for one wrapped over two lines: its first half is dropped
# too when it begins so, holds an address or ends with a comma.
ATTRIBUTION_START = re.compile(
    r"^(?:on|am|le|el|il|op|em|w dniu|den|dne|d\.|в|у|ma|ti|ke|to|pe|la|su|mo|tu|we|th|fr|"
    r"sa|lun|mar|mer|jeu|ven|sam|dim|mo\.|di\.|mi\.|do\.|fr\.|sa\.|so\.|\d)[\s,.]",
    re.IGNORECASE)

# Outlook's block over an original it adds without '>' ("From: ...", "Sent: ...", "To: ...",
# "Subject: ..."), in each language; sometimes bold in plain text ("*From:*"), sometimes the
# name on the next line ("From:" alone, from HTML).
FROM_WORDS = (r"from|von|de|da|fra|från|van|od|от|від|lähettäjä|feladó|kimden|gönderen|"
              r"odesílatel|od koho|差出人|发件人|寄件者|發件人|afzender|remetente|mittente|"
              r"expéditeur|avsändare|avsender|afsender|보낸 사람|от кого|відправник|"
              r"de la|από")
HEADER_WORDS = (r"sent|date|to|subject|cc|gesendet|datum|an|betreff|enviado|enviada|fecha|"
                r"para|asunto|envoyé|à|objet|inviato|data|a|oggetto|verzonden|aan|onderwerp|"
                r"assunto|wysłano|wysłane|do|temat|отправлено|дата|кому|тема|надіслано|"
                r"skickat|till|ämne|sendt|til|emne|lähetetty|vastaanottaja|aihe|päivämäärä|"
                r"elküldve|küldve|címzett|tárgy|dátum|odesláno|komu|předmět|gönderildi|kime|"
                r"konu|tarih|送信日時|宛先|件名|日付|发送时间|發送時間|收件人|收件者|主题|主旨|"
                r"日期|时间|時間|받는 사람|보낸 날짜|제목|trimis|către|subiect|πρoς|θέμα")
FROM_LINE = re.compile(rf"^\*?\s*(?:{FROM_WORDS})\s*\*?\s*[:：]", re.IGNORECASE)
HEADER_LINE = re.compile(rf"^\*?\s*(?:{HEADER_WORDS})\s*\*?\s*[:：]", re.IGNORECASE)
HEADER_LOOKAHEAD = 6  # lines after a From line where the rest of the block must begin
# Lines of a reply read at most, quoted ones included: the writer's text is at the top or under
# a quote, never thousands of lines down; what follows is left out, and a hostile mail of
# short lines costs a bounded time (each line meets a dozen patterns).
MAX_LINES = 5000

# Lines that end the writer's text: the signature delimiter, Outlook's rule of underscores,
# and "-----Original Message-----" in any language ("-------- Původní zpráva --------",
# "----- Mensaje original -----", QQ's "------------------ 原始邮件 ------------------").
ORIGINAL_WORDS = (r"original message|ursprüngliche nachricht|originalnachricht|"
                  r"mensaje original|message d'origine|messaggio originale|"
                  r"oorspronkelijk bericht|mensagem original|wiadomość oryginalna|"
                  r"исходное сообщение|оригинальное сообщение|пересылаемое сообщение|"
                  r"вихідне повідомлення|оригінальне повідомлення|ursprungligt meddelande|"
                  r"originalmeddelande|opprinnelig melding|oprindelig meddelelse|"
                  r"original meddelelse|alkuperäinen viesti|eredeti üzenet|původní zpráva|"
                  r"orijinal ileti|özgün ileti|元のメッセージ|原始邮件|原始郵件|原邮件|"
                  r"forwarded message|weitergeleitete nachricht|mensaje reenviado|"
                  r"message transféré")
SEPARATOR = re.compile(rf"^(?:--\s*|_{{5,}}\s*|[-—–]{{2,}}\s*[^-—–\s].{{0,60}}?\s*[-—–]{{2,}}\s*|"
                       rf"[-—–\s]*(?:{ORIGINAL_WORDS})\s*[-—–:\s]*)$", re.IGNORECASE)

# The line a phone or a program adds under what one writes ("Sent from my iPhone", "Get
# Outlook for iOS", "Von meinem iPhone gesendet"): never an order, never a reason to stop.
PROGRAM_SIGNATURE = re.compile(
    r"^(?:sent from|sent with|sent via|sent using|sent on|get outlook for|"
    r"gesendet von|gesendet mit|gesendet vom|von meinem .{1,60} gesendet|outlook für .{1,30} "
    r"beziehen|enviado desde|enviado con|enviado do|enviado a partir|enviado de|"
    r"obtener outlook para|obtenha o outlook|obter o outlook|envoyé de|envoyé depuis|"
    r"envoyé à partir|envoyé avec|obtenir outlook pour|télécharger outlook|inviato da|"
    r"inviato dal|inviato con|scarica outlook|ottieni outlook|verzonden vanaf|verzonden met|"
    r"verstuurd vanaf|verstuurd met|verzonden van|outlook voor .{1,30} downloaden|"
    r"download outlook voor|wysłane z|wysłano z|wysłane przy|pobierz outlook|"
    r"pobierz aplikację outlook|.{1,40}b[óo]l küldve|.{1,40}b[őo]l küldve|"
    r"отправлено с|отправлено из|отправлено через|"
    r"получить outlook|скачать outlook|надіслано з|відправлено з|надіслано через|"
    r"отримати outlook|skickat från|skickades från|hämta outlook|sendt fra|sendt med|"
    r"få outlook|hent outlook|lähetetty|hanki outlook|küldve|az .{1,40} küldve|"
    r".{1,40}ról küldve|.{1,40}ről küldve|odesláno z|odesláno ze|odoslané z|"
    r"stáhněte si outlook|.{1,40} gönderildi|.{1,30}から送信|发自我的|从我的.{1,30}发送|"
    r"寄自我的|從我的.{1,30}傳送|发自|寄自|trimis de pe|trimis din|αποστολή από|"
    r"yahoo mail|ios용 outlook|.{1,30}에서 보냄)", re.IGNORECASE)

# A line that names a phone, a tablet or a mail program is a program's signature, whatever
# it says around the name: no move names one.
PROGRAM_NAMES = re.compile(r"\b(?:iphone|ipad|android|galaxy|blackberry|outlook|windows|yahoo|"
                           r"yandex|яндекс|huawei|xiaomi|samsung|thunderbird|gmail|aka\.ms)\b",
                           re.IGNORECASE)
# A date or a time of day ("2026", "10:00", "10.00"): an attribution holds one, a move never.
DATE_OR_TIME = re.compile(r"(?<!\d)(?:(?:19|20)\d\d|\d{1,2}[:.]\d\d)(?!\d)")
WROTE_WITHIN = re.compile(rf"(?:^|\s)(?:{WROTE})\b.{{0,160}}[:：]\s*$", re.IGNORECASE)

_SPACES = re.compile(r"[\u00a0\u2000-\u200b\u202f\u205f\u3000\ufeff]")


def plain(line: str) -> str:
    """`line` stripped, its no-break and other odd spaces made plain ones."""
    return _SPACES.sub(" ", line).strip()


def is_attribution(line: str) -> bool:
    """Whether a stripped line introduces a quote ("On ... wrote:", "Le ... a écrit :")."""
    if not line or len(line) > 400:
        return False
    return (ATTRIBUTION_END.search(line) is not None
            or ATTRIBUTION_INSIDE.search(line) is not None
            or (WROTE_WITHIN.search(line) is not None and DATE_OR_TIME.search(line) is not None))


def is_program_signature(line: str) -> bool:
    return len(line) <= 200 and (PROGRAM_SIGNATURE.match(line) is not None
                                 or PROGRAM_NAMES.search(line) is not None)


def is_separator(line: str) -> bool:
    return len(line) <= 200 and SEPARATOR.match(line) is not None


def header_block_at(lines: list[str], at: int, froms: list[bool],
                    headers: list[bool]) -> bool:
    """Whether `lines[at]` begins Outlook's header block over an original: "From: ..." with
    its address, or followed within a few lines by "Sent:", "To:", "Subject:" ...; or one of
    those (Hotmail begins with "Date:") with a From line within a few lines. `froms` and
    `headers`: which lines are From lines and other header lines (each matched once)."""
    if froms[at]:
        line = lines[at]
        return "@" in line or "<" in line or any(headers[at + 1:at + 1 + HEADER_LOOKAHEAD])
    return headers[at] and any(froms[at + 1:at + 1 + HEADER_LOOKAHEAD])


def own_part(lines: list[str]) -> tuple[list[int], int]:
    """The indexes of the writer's own lines among `lines` (plain, see `plain`), and where the
    original added without '>' begins (len(lines) when none is; at most MAX_LINES)."""
    own: list[int] = []
    lines = lines[:MAX_LINES]
    froms = [FROM_LINE.match(line) is not None for line in lines]
    headers = [HEADER_LINE.match(line) is not None for line in lines]
    for at, line in enumerate(lines):
        if not line:
            own.append(at)
            continue
        if line.startswith((">", "|")):
            continue
        if is_separator(line) or header_block_at(lines, at, froms, headers):
            return own, at
        if is_program_signature(line):
            continue
        after = bool(own) and own[-1] == at - 1 and bool(lines[at - 1])
        # Wrapped over two lines, the second half perhaps nothing alone ("games by post:").
        joined = after and line.endswith((":", "：")) and not is_attribution(line) and \
            is_attribution(f"{lines[at - 1]} {line}")
        if joined or is_attribution(line):
            # Wrapped over two lines: the first half is the writer's last line so far.
            if after and (joined or _begins_attribution(lines[at - 1], line)):
                own.pop()
            if not _quote_follows(lines, at):  # Yahoo: the original follows without '>'
                return own, at
            continue
        own.append(at)
    return own, len(lines)  # beyond MAX_LINES, the rest is not the writer's


def _quote_follows(lines: list[str], at: int) -> bool:
    """Whether the first line with text after `lines[at]` is quoted ('>'), or none follows."""
    for line in lines[at + 1:at + 1 + HEADER_LOOKAHEAD]:
        if line:
            return line.startswith((">", "|"))
    return True


def _begins_attribution(first: str, second: str) -> bool:
    if "@" in first or "<" in first or DATE_OR_TIME.search(first):  # never in a move
        return True
    if second.startswith("<"):  # the name, then its address on the next line
        return True
    if not first or ATTRIBUTION_START.match(second):
        return False
    return first.endswith(",") or ATTRIBUTION_START.match(first) is not None
