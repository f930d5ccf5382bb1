// Moves by clicking the map: a progressive layer over the seat page's move form.
// Click a free cloister field for a monastery, a crest for an advisor; the page picks the
// cards that make that placement legal (or asks which, when there is a choice), then the
// player presses Preview and confirms as with the plain form. Without JavaScript the form
// works as it is.
(function () {
  "use strict";
  var form = document.getElementById("place-form");
  var data = document.getElementById("legal-moves");
  if (!form || !data) { return; }
  var legal = JSON.parse(data.textContent).map(parse).filter(Boolean);
  var panel = document.getElementById("map-choice");
  var wordsData = document.getElementById("map-words");
  // The panel's sentences in the reader's language, from the page ({name} filled in here).
  var words = wordsData ? JSON.parse(wordsData.textContent) : {};
  function say(key, values) {
    return (words[key] || key).replace(/\{(\w+)\}/g, function (all, name) {
      return values && name in values ? values[name] : all;
    });
  }
  var chosen = { country: null, pieces: [] };

  function parse(text) {  // "GGR Franken: Mainz, advisor" -> {cards, country, pieces}
    var colon = text.indexOf(":");
    if (colon < 0) { return null; }
    var head = text.slice(0, colon).split(" ");
    return { text: text, cards: head[0], country: head.slice(1).join(" "),
             pieces: text.slice(colon + 1).split(",").map(function (p) { return p.trim(); }) };
  }
  function same(a, b) { return a.slice().sort().join("|") === b.slice().sort().join("|"); }
  function matches() {  // one choice per way of paying, even if a move were listed twice
    var seen = {};
    return legal.filter(function (m) {
      if (m.country !== chosen.country || !same(m.pieces, chosen.pieces) || seen[m.cards]) {
        return false;
      }
      seen[m.cards] = true;
      return true;
    });
  }
  function setField(name, value) {
    var input = form.elements[name];
    if (input) { input.value = value; }
  }
  function fillCards(cards) {
    Array.prototype.forEach.call(form.querySelectorAll("input[name^='cards_']"), function (i) {
      i.value = "0";
    });
    cards.split("").forEach(function (code) {
      var input = form.elements["cards_" + code];
      if (input) { input.value = String(Number(input.value) + 1); }
    });
  }
  function cardWords(cards) {  // "RRO" -> "2 × red (Franken/Aragon), 1 × orange (...)"
    var counts = {}, order = [];
    cards.split("").forEach(function (code) {
      if (!counts[code]) { counts[code] = 0; order.push(code); }
      counts[code] += 1;
    });
    var names = words.card_words || {};
    return order.map(function (code) {
      var card = names[code];
      return card ? say("card", { count: counts[code], colour: card.colour,
                                  countries: card.countries })
        : counts[code] + " × " + code;
    }).join(", ");
  }
  function describe(piece) {
    return piece === "advisor" ? say("advisor", { country: chosen.country })
      : say("monastery", { field: piece });
  }
  function show() {
    setField("country", chosen.country || "");
    setField("piece1", chosen.pieces[0] || "");
    setField("piece2", chosen.pieces[1] || "");
    var options = matches();
    panel.hidden = false;
    panel.textContent = "";
    var text = document.createElement("p");
    if (!chosen.pieces.length) {
      text.textContent = say("prompt");
      panel.appendChild(text);
      return;
    }
    var pieces = chosen.pieces.map(describe);
    text.textContent = say("chose", { pieces: pieces.length > 1
      ? say("both", { first: pieces[0], second: pieces[1] }) : pieces[0] }) + " ";
    panel.appendChild(text);
    if (!options.length) {
      var empty = (words.empty_countries || []).indexOf(chosen.country) >= 0;
      text.textContent += empty && chosen.pieces.length > 1
        ? say("empty", { country: chosen.country }) : say("cannot");
      return;
    }
    if (options.length === 1) {
      fillCards(options[0].cards);
      text.textContent += say("takes", { cards: cardWords(options[0].cards) });
    } else {
      var fieldset = document.createElement("fieldset");
      var legend = document.createElement("legend");
      legend.textContent = say("which");
      fieldset.appendChild(legend);
      options.forEach(function (option, index) {
        var label = document.createElement("label");
        var radio = document.createElement("input");
        radio.type = "radio";
        radio.name = "map-cards";
        radio.value = option.cards;
        radio.checked = index === 0;
        radio.addEventListener("change", function () { fillCards(option.cards); });
        label.appendChild(radio);
        label.appendChild(document.createTextNode(" " + cardWords(option.cards)));
        fieldset.appendChild(label);
      });
      panel.appendChild(fieldset);
      fillCards(options[0].cards);
    }
    var button = document.createElement("button");
    button.type = "submit";
    button.name = "action";
    button.value = "place";
    button.setAttribute("form", "place-form");
    button.textContent = say("preview");
    panel.appendChild(button);
    var again = document.createElement("button");
    again.type = "button";
    again.className = "secondary";
    again.textContent = say("again");
    again.addEventListener("click", function () { chosen = { country: null, pieces: [] }; show(); });
    panel.appendChild(again);
    // The next control a keyboard needs, not the map (the Preview button lies after the
    // whole map otherwise): the cards to choose, else the Preview button.
    var first = panel.querySelector("input[type=radio]:checked");
    (first || button).focus();
  }
  function choose(country, piece) {
    if (chosen.country !== country || chosen.pieces.length >= 2 ||
        (piece !== "advisor" && chosen.pieces.indexOf(piece) >= 0)) {
      chosen = { country: country, pieces: [] };
    }
    chosen.pieces.push(piece);
    show();
  }
  function activate(element) {
    if (element.dataset.field) {
      choose(element.dataset.country, element.dataset.field);
    } else if (element.dataset.crest) {
      choose(element.dataset.crest, "advisor");
    }
  }
  Array.prototype.forEach.call(document.querySelectorAll("svg .clickable"), function (el) {
    el.addEventListener("click", function () { activate(el); });
    el.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        activate(el);
      }
    });
  });
}());
