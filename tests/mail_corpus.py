"""A corpus of replies as mail programs write them, built here from each program's quoting
format (issue 41, point 5): a table of client shapes x languages x where the moves stand, each
answering a real mail of a real game (its text and HTML quoted as that program quotes).

`reply(shape, lang, original, orders, placement, index)` gives the raw bytes of one reply;
`SHAPES` and `LANGUAGES` are the tables; `cases(count)` spreads a corpus over them. Used by
tests/server/test_mail_corpus.py and bench/mailin_bench.py (--corpus), which play whole games by these
replies alone.
"""

from __future__ import annotations

import html
import textwrap
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from email.utils import make_msgid

# --- languages -------------------------------------------------------------------------------
# Per language: the attribution lines of Gmail, Apple Mail (and iPhone), Thunderbird, Yahoo and
# Mail.ru ({name} and {addr}: the original's sender), Outlook's header words (From, Sent, To,
# Subject), "Original Message", the lines phones and programs sign with (iPhone, Android,
# Outlook mobile, Windows Mail), a note to go with an attachment, and a legacy charset its
# programs still send.


@dataclass(frozen=True)
class Language:
    code: str
    charset: str
    gmail: str
    apple: str
    thunderbird: str
    yahoo: str
    outlook: tuple[str, str, str, str]
    original: str
    iphone: str
    android: str
    outlook_mobile: str
    windows: str
    note: str


LANGUAGES = {lang.code: lang for lang in (
    Language("en", "windows-1252",
             "On Wed, Dec 2, 2026 at 10:00 AM {name} <{addr}> wrote:",
             "On 2 Dec 2026, at 10:00, {name} <{addr}> wrote:",
             "On 02/12/2026 10:00, {name} wrote:",
             "On Wednesday, December 2, 2026, 10:00:00 AM GMT+1, {name} <{addr}> wrote:",
             ("From", "Sent", "To", "Subject"), "Original Message",
             "Sent from my iPhone", "Sent from my Galaxy", "Get Outlook for iOS",
             "Sent from Mail for Windows", "My turn file is attached."),
    Language("de", "iso-8859-1",
             "Am Mi., 2. Dez. 2026 um 10:00 Uhr schrieb {name} <{addr}>:",
             "Am 02.12.2026 um 10:00 schrieb {name} <{addr}>:",
             "Am 02.12.26 um 10:00 schrieb {name}:",
             "Am Mittwoch, 2. Dezember 2026, 10:00:00 MEZ hat {name} <{addr}> Folgendes "
             "geschrieben:",
             ("Von", "Gesendet", "An", "Betreff"), "Ursprüngliche Nachricht",
             "Von meinem iPhone gesendet", "Von meinem Samsung Galaxy Smartphone gesendet.",
             "Gesendet von Outlook für Android", "Gesendet von Mail für Windows",
             "Anbei meine Zugdatei."),
    Language("es", "iso-8859-1",
             "El mié, 2 dic 2026 a las 10:00, {name} (<{addr}>) escribió:",
             "El 2 dic 2026, a las 10:00, {name} <{addr}> escribió:",
             "El 2/12/26 a las 10:00, {name} escribió:",
             "El miércoles, 2 de diciembre de 2026, 10:00:00 CET, {name} <{addr}> escribió:",
             ("De", "Enviado", "Para", "Asunto"), "Mensaje original",
             "Enviado desde mi iPhone", "Enviado desde mi Galaxy", "Obtener Outlook para iOS",
             "Enviado desde Correo para Windows", "Adjunto mi archivo de turno."),
    Language("fr", "iso-8859-15",
             "Le mer. 2 déc. 2026 à 10:00, {name} <{addr}> a\u00a0écrit\u00a0:",
             "Le 2 déc. 2026 à 10:00, {name} <{addr}> a écrit\u00a0:",
             "Le 02/12/2026 à 10:00, {name} a écrit\u00a0:",
             "Le mercredi 2 décembre 2026, 10:00:00 UTC+1, {name} <{addr}> a écrit :",
             ("De\u00a0", "Envoyé\u00a0", "À\u00a0", "Objet\u00a0"), "Message d'origine",
             "Envoyé de mon iPhone", "Envoyé de mon Galaxy", "Obtenir Outlook pour iOS",
             "Envoyé à partir de Courrier pour Windows", "Ci-joint mon fichier de tour."),
    Language("it", "iso-8859-1",
             "Il giorno mer 2 dic 2026 alle ore 10:00 {name} <{addr}> ha scritto:",
             "Il giorno 2 dic 2026, alle ore 10:00, {name} <{addr}> ha scritto:",
             "Il 02/12/2026 10:00, {name} ha scritto:",
             "Il mercoledì 2 dicembre 2026, 10:00:00 CET, {name} <{addr}> ha scritto:",
             ("Da", "Inviato", "A", "Oggetto"), "Messaggio originale",
             "Inviato da iPhone", "Inviato dal mio Galaxy", "Scarica Outlook per iOS",
             "Inviato da Posta per Windows", "In allegato il mio file del turno."),
    Language("nl", "windows-1252",
             "Op wo 2 dec 2026 om 10:00 schreef {name} <{addr}>:",
             "Op 2 dec. 2026 om 10:00 heeft {name} <{addr}> het volgende geschreven:",
             "Op 02-12-2026 om 10:00 schreef {name}:",
             "Op woensdag 2 december 2026 10:00:00 CET schreef {name} <{addr}>:",
             ("Van", "Verzonden", "Aan", "Onderwerp"), "Oorspronkelijk bericht",
             "Verstuurd vanaf mijn iPhone", "Verzonden vanaf mijn Galaxy",
             "Outlook voor iOS downloaden", "Verzonden vanuit Mail voor Windows",
             "Hierbij mijn beurtbestand."),
    Language("pt", "iso-8859-1",
             "Em qua., 2 de dez. de 2026 às 10:00, {name} <{addr}> escreveu:",
             "Em 2 de dez. de 2026, à(s) 10:00, {name} <{addr}> escreveu:",
             "Em 02/12/2026 10:00, {name} escreveu:",
             "Em quarta-feira, 2 de dezembro de 2026 10:00:00 BRT, {name} <{addr}> escreveu:",
             ("De", "Enviado", "Para", "Assunto"), "Mensagem original",
             "Enviado do meu iPhone", "Enviado do meu Galaxy", "Obter o Outlook para iOS",
             "Enviado do Email para Windows", "Segue em anexo o meu ficheiro de jogada."),
    Language("pl", "iso-8859-2",
             "śr., 2 gru 2026 o 10:00 {name} <{addr}> napisał(a):",
             "Wiadomość napisana przez {name} <{addr}> w dniu 2.12.2026, o godz. 10:00:",
             "W dniu 2.12.2026 o 10:00, {name} pisze:",
             "W środę, 2 grudnia 2026 10:00:00 CET, {name} <{addr}> napisał(a):",
             ("Od", "Wysłano", "Do", "Temat"), "Wiadomość oryginalna",
             "Wysłane z iPhone'a", "Wysłane z mojego Galaxy",
             "Pobierz aplikację Outlook dla systemu iOS", "Wysłane z aplikacji Poczta dla Windows",
             "W załączniku mój plik tury."),
    Language("ru", "koi8-r",
             "ср, 2 дек. 2026 г. в 10:00, {name} <{addr}>:",
             "2 дек. 2026 г., в 10:00, {name} <{addr}> написал(а):",
             "02.12.2026 10:00, {name} пишет:",
             "В среду, 2 декабря 2026 г., 10:00:00 GMT+3, {name} <{addr}> написал(-а):",
             ("От", "Отправлено", "Кому", "Тема"), "Исходное сообщение",
             "Отправлено с iPhone", "Отправлено с устройства Galaxy", "Получить Outlook для iOS",
             "Отправлено из приложения Почта для Windows", "Мой файл хода во вложении."),
    Language("uk", "koi8-u",
             "ср, 2 груд. 2026 р. о 10:00 {name} <{addr}> пише:",
             "2 груд. 2026 р. о 10:00 {name} <{addr}> написав(ла):",
             "02.12.2026 10:00, {name} пише:",
             "Середа, 2 грудня 2026 р., 10:00:00 GMT+2, {name} <{addr}> написав(-ла):",
             ("Від", "Надіслано", "Кому", "Тема"), "Вихідне повідомлення",
             "Надіслано з iPhone", "Надіслано з мого Galaxy", "Отримати Outlook для iOS",
             "Надіслано з Пошти для Windows", "Мій файл ходу у вкладенні."),
    Language("sv", "iso-8859-1",
             "Den ons 2 dec. 2026 kl 10:00 skrev {name} <{addr}>:",
             "2 dec. 2026 kl. 10:00 skrev {name} <{addr}>:",
             "Den 2026-12-02 kl. 10:00, skrev {name}:",
             "Den onsdag 2 december 2026 10:00:00 CET, {name} <{addr}> skrev:",
             ("Från", "Skickat", "Till", "Ämne"), "Ursprungligt meddelande",
             "Skickat från min iPhone", "Skickat från min Galaxy", "Hämta Outlook för iOS",
             "Skickades från E-post för Windows", "Här är min dragfil."),
    Language("no", "iso-8859-1",
             "ons. 2. des. 2026 kl. 10:00 skrev {name} <{addr}>:",
             "2. des. 2026 kl. 10:00 skrev {name} <{addr}>:",
             "Den 02.12.2026 10:00, skrev {name}:",
             "Onsdag 2. desember 2026, 10:00:00 CET, skrev {name} <{addr}>:",
             ("Fra", "Sendt", "Til", "Emne"), "Opprinnelig melding",
             "Sendt fra min iPhone", "Sendt fra min Galaxy", "Få Outlook for iOS",
             "Sendt fra E-post for Windows", "Her er trekkfilen min."),
    Language("da", "iso-8859-1",
             "Den ons. 2. dec. 2026 kl. 10.00 skrev {name} <{addr}>:",
             "Den 2. dec. 2026 kl. 10.00 skrev {name} <{addr}>:",
             "Den 02-12-2026 kl. 10:00 skrev {name}:",
             "Den onsdag 2. december 2026 10.00.00 CET skrev {name} <{addr}>:",
             ("Fra", "Sendt", "Til", "Emne"), "Oprindelig meddelelse",
             "Sendt fra min iPad", "Sendt fra min Galaxy", "Hent Outlook til iOS",
             "Sendt fra Mail til Windows", "Her er min turfil."),
    Language("fi", "iso-8859-15",
             "ke 2. jouluk. 2026 klo 10.00 {name} <{addr}> kirjoitti:",
             "{name} <{addr}> kirjoitti 2.12.2026 kello 10.00:",
             "{name} kirjoitti 2.12.2026 klo 10.00:",
             "keskiviikko 2. joulukuuta 2026 klo 10.00.00 UTC+2 {name} <{addr}> kirjoitti:",
             ("Lähettäjä", "Lähetetty", "Vastaanottaja", "Aihe"), "Alkuperäinen viesti",
             "Lähetetty iPhonesta", "Lähetetty Galaxy-laitteesta", "Hanki Outlook for iOS",
             "Lähetetty Windowsin Sähköpostista", "Liitteenä vuorotiedostoni."),
    Language("hu", "iso-8859-2",
             "{name} <{addr}> ezt írta (időpont: 2026. dec. 2., Sze, 10:00):",
             "2026. dec. 2. dátummal, 10:00 időpontban {name} <{addr}> írta:",
             "2026. 12. 02. 10:00 keltezéssel, {name} írta:",
             "2026. december 2., szerda 10:00:00 CET időpontban {name} <{addr}> írta:",
             ("Feladó", "Elküldve", "Címzett", "Tárgy"), "Eredeti üzenet",
             "iPhone-ról küldve", "Samsung Galaxy okostelefonról küldve",
             "Az iOS-hez készült Outlook beszerzése", "Windows Levelezésből küldve",
             "Csatolom a lépésfájlomat."),
    Language("cs", "iso-8859-2",
             "st 2. 12. 2026 v 10:00 odesílatel {name} <{addr}> napsal:",
             "2. 12. 2026 v 10:00, {name} <{addr}>:",
             "Dne 02. 12. 26 v 10:00 {name} napsal(a):",
             "Dne středa 2. prosince 2026 10:00:00 SEČ, {name} <{addr}> napsal(a):",
             ("Od", "Odesláno", "Komu", "Předmět"), "Původní zpráva",
             "Odesláno z iPhonu", "Odesláno z mého Galaxy", "Stáhněte si Outlook pro iOS",
             "Odesláno z Pošty pro Windows", "V příloze posílám svůj soubor tahu."),
    Language("tr", "iso-8859-9",
             "{name} <{addr}>, 2 Ara 2026 Çar, 10:00 tarihinde şunu yazdı:",
             "2 Ara 2026 tarihinde 10:00 saatinde, {name} <{addr}> şunları yazdı:",
             "2.12.2026 10:00 tarihinde {name} yazdı:",
             "2 Aralık 2026 Çarşamba 10:00:00 GMT+3 tarihinde {name} <{addr}> şunu yazdı:",
             ("Kimden", "Gönderildi", "Kime", "Konu"), "Özgün İleti",
             "iPhone'umdan gönderildi", "Samsung Galaxy cihazımdan gönderildi",
             "iOS için Outlook'u edinin", "Windows için Posta'dan gönderildi",
             "Hamle dosyam ektedir."),
    Language("ja", "iso-2022-jp",
             "2026年12月2日(水) 10:00 {name} <{addr}>:",
             "2026/12/02 10:00、{name} <{addr}>のメール:",
             "2026/12/02 10:00, {name} さんは書きました:",
             "2026年12月2日(水) 10:00:00 JST、{name} <{addr}> は書きました:",
             ("差出人", "送信日時", "宛先", "件名"), "元のメッセージ",
             "iPhoneから送信", "Galaxy から送信", "iOS 版 Outlook を入手",
             "Windows 版メールから送信", "手番ファイルを添付します。"),
    Language("zh", "gb2312",
             "{name} <{addr}> 于2026年12月2日周三 10:00写道：",
             "2026年12月2日 10:00，{name} <{addr}> 写道：",
             "在 2026/12/2 10:00, {name} 写道:",
             "在 2026年12月2日星期三 10:00:00 [GMT+8]，{name} <{addr}> 写道：",
             ("发件人", "发送时间", "收件人", "主题"), "原始邮件",
             "发自我的iPhone", "发自我的Galaxy", "获取 Outlook for iOS",
             "从 Windows 版邮件发送", "附上我的回合文件。"),
)}


# --- the original being answered -------------------------------------------------------------

@dataclass(frozen=True)
class Original:
    """The mail answered: its sender, subject, date, text and HTML parts, the reply address."""

    name: str
    addr: str
    to: str
    subject: str
    message_id: str
    text: str
    html: str
    reply_to: str
    file_name: str = "turn.txt"


def _wrap(lines: list[str], width: int, prefix: str = "") -> list[str]:
    """Lines re-wrapped at `width` as a mail program wraps quoted text, each piece prefixed."""
    out = []
    for line in lines:
        if len(prefix + line) <= width or not line.strip():
            out.append((prefix + line).rstrip())
            continue
        out += [prefix + piece for piece in textwrap.wrap(
            line, width - len(prefix), break_long_words=False, break_on_hyphens=False)]
    return out


def _quoted(text: str, width: int | None = None) -> list[str]:
    lines = text.splitlines()
    if width:
        return _wrap(lines, width, "> ")
    return [f"> {line}".rstrip() for line in lines]


def _header_block(lang: Language, original: Original, bold: bool = False,
                  date_first: bool = False) -> list[str]:
    mark = "*" if bold else ""
    words = lang.outlook
    rows = [(words[0], f"{original.name} <{original.addr}>"),
            (words[1], "Wednesday, 2 December 2026 10:00"),
            (words[2], original.to), (words[3], original.subject)]
    if date_first:
        rows = [rows[1], rows[0], rows[2], rows[3]]
    return [f"{mark}{word}:{mark} {value}" for word, value in rows]


def _attribution(template: str, original: Original, wrap: int | None = None) -> list[str]:
    line = template.format(name=original.name, addr=original.addr)
    if wrap and len(line) > wrap:  # Gmail and Thunderbird wrap a long one over two lines
        cut = line.rfind(" ", 0, wrap)
        return [line[:cut], line[cut + 1:]]
    return [line]


def _html_lines(lines: list[str]) -> str:
    return "".join(f"<div>{html.escape(line) or '<br>'}</div>" for line in lines)


# --- the mail programs --------------------------------------------------------------------------
# Each shape gives (text lines or None, HTML or None, MIME options) for the moves (`orders`,
# lines) placed at the top, the bottom (under the quote) or inline (under the quoted ORDERS
# line). Where a shape cannot place them so, it places them at the top.

@dataclass(frozen=True)
class Built:
    text: list[str] | None
    html: str | None
    charset: str = "utf-8"
    cte: str = "quoted-printable"
    crlf: bool = False
    xml_declaration: bool = False
    files: tuple[tuple[str, str, str, str], ...] = ()  # (type, name, disposition, content)


def _inline(quoted: list[str], orders: list[str]) -> list[str]:
    """`orders` under the quoted ORDERS line and its comments (above the quote when there is
    none: an answer of the server's, after a reply that was not applied)."""
    marked = [i for i, line in enumerate(quoted) if line.strip(" >") == "=== ORDERS ==="]
    if not marked:
        return [*orders, "", *quoted]
    at = marked[-1]
    end = at + 1
    while end < len(quoted) and quoted[end].lstrip(">").strip().startswith("#"):
        end += 1
    return quoted[:end] + orders + quoted[end:]


def gmail(lang, original, orders, placement, android=False):
    quote = _quoted(original.text)
    attribution = _attribution(lang.gmail, original, wrap=76)
    if placement == "bottom":
        text = [*attribution, "", *quote, "", *orders, ""]
    elif placement == "inline":
        text = [*attribution, "", *_inline(quote, orders), ""]
    else:
        text = [*orders, "", *attribution, "", *quote, ""]
    body = _html_lines(orders) if placement != "inline" else ""
    html_part = (f'<div dir="ltr">{body}</div><br><div class="gmail_quote">'
                 f'<div dir="ltr" class="gmail_attr">{html.escape(" ".join(attribution))}'
                 f'<br></div><blockquote class="gmail_quote" style="margin:0px 0px 0px 0.8ex">'
                 f'{original.html}</blockquote></div>')
    if placement == "inline":
        html_part = text_as_html(text)
    return Built(text, html_part, cte="base64" if android else "quoted-printable")


def text_as_html(lines: list[str]) -> str:
    return "<div>" + "<br>".join(html.escape(line) for line in lines) + "</div>"


def outlook(lang, original, orders, placement, *, separator=False, charset=None,
            mobile=False, windows=False, crlf=True, bold=False, rewrap=False):
    signature = ([lang.outlook_mobile + "<https://aka.ms/o0ukef>", ""] if mobile else
                 [lang.windows, ""] if windows else [])
    head = ([f"-----{lang.original}-----"] if separator else
            ["________________________________"] if mobile else [])
    head += _header_block(lang, original, bold=bold)
    body = _wrap(original.text.splitlines(), 72) if rewrap else original.text.splitlines()
    if placement == "inline":
        text = ["", *head, "", *_inline(body, orders)]
    else:
        text = [*orders, "", *signature, *head, "", *body]
    html_head = "<br>".join(f"<b>{html.escape(line.split(':', 1)[0])}:</b>"
                            f"{html.escape(line.split(':', 1)[1])}" for line in head
                            if ":" in line)
    html_part = None if separator else (
        "<html><body>" + "".join(f'<p class="MsoNormal">{html.escape(line)}<o:p></o:p></p>'
                                 for line in orders) +
        (f"<p class=MsoNormal>{html.escape(signature[0])}</p>" if signature else "") +
        '<div style="border:none;border-top:solid #E1E1E1 1.0pt;padding:3.0pt 0cm 0cm 0cm">'
        f'<p class="MsoNormal">{html_head}</p></div>{original.html}</body></html>')
    if placement == "inline" and html_part is not None:
        html_part = text_as_html(text)
    return Built(text, html_part, charset=charset or lang.charset, crlf=crlf,
                 cte="8bit" if separator else "quoted-printable")


def outlook_html_only(lang, original, orders, placement):
    """Outlook's HTML alone, with "From:" alone on its line, the name under it."""
    words = lang.outlook
    html_part = (
        "<html><head><meta http-equiv=Content-Type content='text/html; charset=utf-8'></head>"
        "<body>" + "".join(f"<p class=MsoNormal>{html.escape(line)}</p>" for line in orders) +
        f"<hr><p><b>{words[0]}:</b><br>{html.escape(original.name)}<br>"
        f"<b>{words[1]}:</b> Wednesday, 2 December 2026 10:00<br>"
        f"<b>{words[2]}:</b> {html.escape(original.to)}<br>"
        f"<b>{words[3]}:</b> {html.escape(original.subject)}</p>{original.html}</body></html>")
    return Built(None, html_part, cte="base64")


def hotmail_xml(lang, original, orders, placement):
    """Old Hotmail and Windows Live Mail: HTML alone, beginning with an XML declaration."""
    words = lang.outlook
    html_part = (
        '<html xmlns="http://www.w3.org/1999/xhtml"><head><style><!-- .hmmessage P { margin:0px; '
        'padding:0px } --></style></head><body class="hmmessage">' + "<br>".join(
            html.escape(line) for line in orders) +
        f'<br><br><hr id="stopSpelling">Date: Wed, 2 Dec 2026 10:00:00 +0000<br>'
        f"{words[0]}: {html.escape(original.addr)}<br>{words[2]}: {html.escape(original.to)}"
        f"<br>{words[3]}: {html.escape(original.subject)}<br><br>{original.html}</body></html>")
    return Built(None, html_part, charset=lang.charset if lang.charset != "iso-2022-jp"
                 else "utf-8", xml_declaration=True)


def apple(lang, original, orders, placement, iphone=False):
    signature = [lang.iphone, ""] if iphone else []
    attribution = _attribution(lang.apple, original)
    quote = _quoted(original.text)
    if placement == "bottom":
        text = [*attribution, "", *quote, "", *orders, "", *signature]
    elif placement == "inline":
        text = [*attribution, "", *_inline(quote, orders), "", *signature]
    else:
        text = [*orders, "", *signature, *attribution, "", *quote]
    html_part = (f"<html><body dir=\"auto\">{_html_lines(orders)}"
                 f"{_html_lines(signature[:1])}<div><br><blockquote type=\"cite\">"
                 f"{html.escape(attribution[0])}<br><br>{original.html}</blockquote></div>"
                 "</body></html>")
    if placement != "top":
        html_part = text_as_html(text)
    return Built(text, html_part, cte="quoted-printable" if not iphone else "8bit")


def samsung(lang, original, orders, placement):
    """Samsung's mail app: its signature, then the original under a dashed title, no '>'."""
    head = [f"-------- {lang.original} --------", *_header_block(lang, original,
                                                                  date_first=True)]
    text = [*orders, "", "", lang.android, "", *head, "", *original.text.splitlines()]
    return Built(text, None, cte="base64")


def blackberry(lang, original, orders, placement):
    """BlackBerry 10: its signature, "Original Message" between no-break spaces, no '>'."""
    head = [f"\u00a0 {lang.original} \u00a0", *_header_block(lang, original)]
    text = [*orders, "", "Sent from my BlackBerry 10 smartphone.", *head, "",
            *original.text.splitlines()]
    return Built(text, None, cte="quoted-printable")


def thunderbird(lang, original, orders, placement, rewrap=False):
    attribution = _attribution(lang.thunderbird, original, wrap=None)
    quote = _quoted(original.text, 72 if rewrap else None)
    signature = ["-- ", "Anna Beispiel", "https://example.org/anna"]
    if placement == "bottom":
        text = [*attribution, "", *quote, "", *orders, "", *signature]
    elif placement == "inline":
        text = [*attribution, *_inline(quote, orders), "", *signature]
    else:
        text = [*orders, "", *signature, "", *attribution, *quote]
    return Built(text, None, charset=lang.charset,
                 cte="8bit" if lang.code in ("de", "fr") else "quoted-printable")


def yahoo(lang, original, orders, placement):
    """Yahoo: the attribution indented, the original under it without '>' in the text part."""
    attribution = _attribution(lang.yahoo, original)
    text = [*orders, "", "", "    " + attribution[0], "", *original.text.splitlines()]
    html_part = (f'<html><body><div class="ydp" style="font-family:Helvetica">'
                 f"{_html_lines(orders)}</div><div id=\"yahoo_quoted_1\" class=\"yahoo_quoted\">"
                 f"<div>{html.escape(attribution[0])}</div>{original.html}</div></body></html>")
    return Built(text, html_part)


def mailru(lang, original, orders, placement):
    attribution = (f"Среда, 2 декабря 2026, 10:00 +03:00 от {original.name} <{original.addr}>:"
                   if lang.code == "ru" else lang.gmail.format(name=original.name,
                                                               addr=original.addr))
    text = [*orders, "", "", attribution, *_quoted(original.text)]
    html_part = (f"<HTML><BODY>{_html_lines(orders)}<br><br>{html.escape(attribution)}"
                 f"<blockquote style=\"border-left:1px solid #0857A6\">{original.html}"
                 "</blockquote></BODY></HTML>")
    return Built(text, html_part, charset="koi8-r" if lang.code == "ru" else "utf-8",
                 cte="base64")


def yandex(lang, original, orders, placement):
    attribution = f'02.12.2026, 10:00, "{original.name}" <{original.addr}>:'
    quote = _quoted(original.text)
    if placement == "bottom":
        text = [attribution, *quote, "", *orders, "", "-- ",
                "Отправлено из мобильной Яндекс Почты"]
    else:
        text = [*orders, "", "-- ", "Отправлено из мобильной Яндекс Почты", "", "",
                attribution, *quote]
    html_part = (f"<div>{_html_lines(orders)}</div><div>-- </div><div>Отправлено из мобильной "
                 f"Яндекс Почты</div><div><br></div><div>{html.escape(attribution)}</div>"
                 f"<blockquote>{original.html}</blockquote>")
    if placement != "top":
        html_part = text_as_html(text)
    return Built(text, html_part, cte="base64")


def zimbra(lang, original, orders, placement):
    head = [f"----- {lang.original} -----", *_header_block(lang, original)]
    text = [*orders, "", *head, "", *_quoted(original.text)]
    html_part = (f"<html><body><div style=\"font-family:arial\">{_html_lines(orders)}<br>"
                 f"<hr id=\"zwchr\"><div><b>{lang.outlook[0]}: </b>{html.escape(original.name)}"
                 f"<br><b>{lang.outlook[3]}: </b>{html.escape(original.subject)}<br></div>"
                 f"<br><blockquote>{original.html}</blockquote></div></body></html>")
    return Built(text, html_part)


def only_quote_in_text(lang, original, orders, placement):
    """A webmail whose text part holds only the quote; the moves are in the HTML part."""
    attribution = _attribution(lang.gmail, original)
    text = ["", *attribution, *_quoted(original.text)]
    html_part = (f"<html><body>{_html_lines(orders)}<blockquote>{original.html}"
                 "</blockquote></body></html>")
    return Built(text, html_part)


def attached(lang, original, orders, placement, kind="text/plain", disposition="attachment",
             note=True):
    """The turn file (from the seat page, the moves under its ORDERS line) attached."""
    turn_file = original.text[original.text.find("Turn file of"):]
    lines = _inline(turn_file.splitlines(), orders)
    text = [lang.note, "", lang.iphone] if note else []
    name = original.file_name if kind == "text/plain" else "orders.dat"
    return Built(text or None, None, cte="base64",
                 files=((kind, name, disposition, "\r\n".join(lines) + "\r\n"),))


def pasted(lang, original, orders, placement):
    """The turn file pasted into the body, the moves under its ORDERS line."""
    turn_file = original.text[original.text.find("Turn file of"):]
    return Built(_inline(turn_file.splitlines(), orders), None)


SHAPES = {
    "gmail": (gmail, ("top", "bottom", "inline")),
    "gmail-android": (lambda *a: gmail(*a, android=True), ("top",)),
    "outlook": (outlook, ("top",)),
    "outlook-bold": (lambda *a: outlook(*a, bold=True, crlf=False), ("top",)),
    "outlook-2003": (lambda *a: outlook(*a, separator=True), ("top",)),
    "outlook-wrapped": (lambda *a: outlook(*a, rewrap=True), ("inline",)),
    "outlook-ios": (lambda *a: outlook(*a, mobile=True, charset="utf-8"), ("top",)),
    "outlook-html": (outlook_html_only, ("top",)),
    "hotmail-xml": (hotmail_xml, ("top",)),
    "windows-mail": (lambda *a: outlook(*a, windows=True, charset="utf-8"), ("top",)),
    "apple-mail": (apple, ("top", "bottom", "inline")),
    "iphone": (lambda *a: apple(*a, iphone=True), ("top", "bottom")),
    "samsung": (samsung, ("top",)),
    "blackberry": (blackberry, ("top",)),
    "thunderbird": (thunderbird, ("top", "bottom", "inline")),
    "thunderbird-wrapped": (lambda *a: thunderbird(*a, rewrap=True), ("inline",)),
    "yahoo": (yahoo, ("top",)),
    "mail.ru": (mailru, ("top",)),
    "yandex": (yandex, ("top", "bottom")),
    "zimbra": (zimbra, ("top",)),
    "webmail-html": (only_quote_in_text, ("top",)),
    "attached": (attached, ("file",)),
    "attached-octet": (lambda *a: attached(*a, kind="application/octet-stream", note=False),
                       ("file",)),
    "attached-inline": (lambda *a: attached(*a, disposition="inline"), ("file",)),
    "pasted": (pasted, ("file",)),
}
# Programs, for the figures by program.
CLIENTS = {"gmail": "Gmail", "gmail-android": "Gmail (Android)", "outlook": "Outlook",
           "outlook-bold": "Outlook", "outlook-2003": "Outlook", "outlook-wrapped": "Outlook",
           "outlook-ios": "Outlook mobile", "outlook-html": "Outlook", "hotmail-xml": "Hotmail",
           "windows-mail": "Windows Mail", "apple-mail": "Apple Mail", "iphone": "iPhone",
           "samsung": "Samsung Email", "blackberry": "BlackBerry",
           "thunderbird": "Thunderbird", "thunderbird-wrapped": "Thunderbird",
           "yahoo": "Yahoo", "mail.ru": "Mail.ru", "yandex": "Yandex", "zimbra": "Zimbra",
           "webmail-html": "webmail", "attached": "attachment", "attached-octet": "attachment",
           "attached-inline": "Apple Mail", "pasted": "Gmail"}


def _charset_fits(text: str, charset: str) -> str:
    try:
        text.encode(charset)
        return charset
    except (UnicodeEncodeError, LookupError):
        return "utf-8"


def reply(shape: str, lang_code: str, original: Original, orders: list[str], placement: str,
          index: int) -> bytes:
    """The raw bytes of one reply of `shape` in `lang_code` answering `original`."""
    lang = LANGUAGES[lang_code]
    build, _ = SHAPES[shape]
    built = build(lang, original, orders, placement)
    message = EmailMessage()
    message["From"] = original.to
    message["To"] = f"{original.name} <{original.reply_to}>"
    message["Subject"] = {"de": "AW: ", "es": "RE: ", "fr": "RE : ", "it": "R: ", "nl": "Re: ",
                          "sv": "SV: ", "no": "SV: ", "da": "SV: ", "fi": "VS: ", "pl": "Odp: ",
                          "tr": "YNT: ", "zh": "回复："}.get(lang_code, "Re: ") + original.subject
    message["Message-ID"] = make_msgid(f"corpus{index}", domain="mail.example.net")
    message["In-Reply-To"] = original.message_id
    message["Date"] = "Wed, 02 Dec 2026 10:05:00 +0000"
    text = "\n".join(built.text) + "\n" if built.text is not None else None
    html_part = built.html
    charset = built.charset
    if charset != "utf-8" and all(_charset_fits(o, charset) == charset for o in orders):
        # A program set to a legacy charset writes what it lacks as '?' in the text and as a
        # character reference in HTML; where the moves themselves do not fit, it takes UTF-8.
        if text is not None:
            text = text.encode(charset, "replace").decode(charset)
        if html_part is not None:
            html_part = html_part.encode(charset, "xmlcharrefreplace").decode(charset)
    if html_part is not None and built.xml_declaration:
        charset = _charset_fits(html_part, built.charset)
        html_part = f'<?xml version="1.0" encoding="{charset}"?>\n' + html_part
    if text is not None:
        message.set_content(text, charset=_charset_fits(text, built.charset),
                            cte=built.cte)
        if html_part is not None:
            message.add_alternative(html_part, subtype="html",
                                    charset=_charset_fits(html_part, built.charset),
                                    cte="quoted-printable")
    elif html_part is not None:
        message.set_content(html_part, subtype="html",
                            charset=_charset_fits(html_part, built.charset), cte=built.cte)
    for kind, name, disposition, content in built.files:
        if kind == "text/plain":
            message.add_attachment(content, subtype="plain", filename=name,
                                   disposition=disposition)
        else:
            message.add_attachment(content.encode(), maintype="application",
                                   subtype="octet-stream", filename=name,
                                   disposition=disposition)
    return message.as_bytes(policy=policy.SMTP if built.crlf else policy.default)


def cases(count: int | None = None) -> list[tuple[str, str, str]]:
    """(shape, language, placement) spread over the tables: every shape in every language
    with its placements in turn; the first `count` of them in an order that reaches every
    shape and language early."""
    out = []
    langs = list(LANGUAGES)
    shapes = list(SHAPES)
    for round_ in range(len(langs)):
        for s, shape in enumerate(shapes):
            lang = langs[(s + round_) % len(langs)]
            placements = SHAPES[shape][1]
            out.append((shape, lang, placements[(round_ + s) % len(placements)]))
    return out[:count] if count else out


# --- playing games by these replies ---------------------------------------------------------------

OUTCOMES = ("exact", "alarm", "refused", "wrong")


@dataclass
class Result:
    shape: str
    lang: str
    placement: str
    kind: str
    orders: list[str]
    played: list[str]
    handled: str
    detail: str

    @property
    def outcome(self) -> str:
        """exact: applied as written; alarm: all applied, then a line more refused; refused:
        fewer applied than written; wrong: a move applied that was not written."""
        if self.played != self.orders[:len(self.played)]:
            return "wrong"
        if self.played == self.orders:
            return "exact" if self.handled == "applied" else "alarm"
        return "refused"


def original_of(message, reply_to: str, name_of_file: str) -> Original:
    """The mail `message` (parsed) as a reply quotes it."""
    import re
    from email.utils import parseaddr

    name, addr = parseaddr(str(message["From"]))
    html_part = message.get_body(("html",))
    inner = html_part.get_content() if html_part is not None else ""
    body = re.search(r"<body[^>]*>(.*)</body>", inner, re.DOTALL | re.IGNORECASE)
    text_part = message.get_body(("plain",))
    return Original(name, addr, str(message["To"]), str(message["Subject"]),
                    str(message["Message-ID"]), text_part.get_content(),
                    body.group(1) if body else inner, reply_to, name_of_file)


def whole_turn(rules, state, pick: int) -> list[str]:
    """A whole turn of the seat to move, in the reader's words: its `pick`th legal move, then
    the first legal one until another seat is to move."""
    from pbem.games import choices

    seat, orders = rules.to_move(state), []
    while rules.to_move(state) == seat and len(orders) < 12:
        legal = choices(rules, state)
        if not legal:
            break
        line = legal[pick % len(legal)] if not orders else legal[0]
        orders.append(line)
        state = rules.apply(state, rules.parse(state, line))
    return orders


class Club:
    """Games played by corpus replies alone, one per game kind at a time (a new one when one
    ends), through `ingest(raw, recipient)`: the path of `pbem ingest-mail`."""

    KINDS = ("kardinal-koenig", "knights-castles")

    def __init__(self, app, ingest, players: int = 3):
        import sys
        from pathlib import Path

        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from server import Mailbox

        self.app, self.ingest, self.players = app, ingest, players
        self.box = Mailbox(app)
        self.games: dict[str, int] = {}
        self.made = 0
        self.read: set[str] = set()
        self.newest: dict[str, object] = {}  # address: the newest mail to it with a Reply-To

    def newest_to(self, address: str):
        """The newest mail to `address` that can be answered; each mail file parsed once."""
        from email.parser import BytesParser
        from email.utils import parseaddr

        self.box.deliver()
        for path in sorted(self.box.folder.glob("*.eml")):
            if path.name in self.read:
                continue
            self.read.add(path.name)
            with path.open("rb") as f:
                message = BytesParser(policy=policy.default).parse(f)
            if message["Reply-To"]:
                self.newest[parseaddr(str(message["To"]))[1].lower()] = message
        return self.newest[address.lower()]

    def _game(self, kind: str) -> int:
        from pbem.games import rules_for
        from pbem.ground.db import reading
        from pbem.ground.models import RUNNING, Game
        from pbem.services.creating import create_game
        from pbem.services.players import parse_player

        with self.app.app_context():
            game_id = self.games.get(kind)
            if game_id is not None:
                with reading() as session:
                    game = session.get(Game, game_id)
                    rules = rules_for(kind)
                    if game.status == RUNNING and rules.to_move(rules.loads(game.state_json)) \
                            is not None:
                        return game_id
            self.made += 1
            created = create_game([parse_player(f"Player {i} <k{self.made}p{i}@example.org>")
                                   for i in range(self.players)], f"corpus{self.made}",
                                  kind=kind, start=0)
            self.games[kind] = created.game_id
            return self.games[kind]

    def play(self, index: int, shape: str, lang: str, placement: str) -> Result:
        from email.utils import parseaddr

        from sqlmodel import select

        from pbem.games import rules_for
        from pbem.ground.db import reading
        from pbem.ground.models import Game, MoveRecord, Seat
        from pbem.services import turnfile

        kind = self.KINDS[index % len(self.KINDS)]
        game_id = self._game(kind)
        with self.app.app_context():
            with reading() as session:
                game = session.get(Game, game_id)
                rules = rules_for(kind)
                state = rules.loads(game.state_json)
                number = rules.to_move(state)
                seat = session.exec(select(Seat).where(Seat.game_id == game_id,
                                                       Seat.number == number)).one()
                before = len(session.exec(select(MoveRecord.id).where(
                    MoveRecord.game_id == game_id)).all())
                email, colour, turn = seat.email, seat.colour, game.turn
            orders = whole_turn(rules, state, index)
            name = turnfile.file_name(kind, game_id, turn, colour)
        mail = self.newest_to(email)
        reply_to = parseaddr(str(mail["Reply-To"]))[1]
        raw = reply(shape, lang, original_of(mail, reply_to, name), orders, placement, index)
        handled = self.ingest(raw, reply_to)
        with self.app.app_context(), reading() as session:
            played = [r.notation for r in session.exec(
                select(MoveRecord).where(MoveRecord.game_id == game_id)
                .order_by(MoveRecord.number))][before:]
        return Result(shape, lang, placement, kind, orders, played, handled.outcome,
                      handled.detail)


def figures(results: list[Result]) -> dict:
    """Counts of each outcome, overall, by program and by language."""
    def count(rows):
        return {o: sum(1 for r in rows if r.outcome == o) for o in OUTCOMES}

    by_client: dict[str, list[Result]] = {}
    by_lang: dict[str, list[Result]] = {}
    for r in results:
        by_client.setdefault(CLIENTS[r.shape], []).append(r)
        by_lang.setdefault(r.lang, []).append(r)
    return {"all": count(results),
            "client": {k: count(v) for k, v in sorted(by_client.items())},
            "language": {k: count(v) for k, v in sorted(by_lang.items())}}
