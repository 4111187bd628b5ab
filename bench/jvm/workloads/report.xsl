<?xml version="1.0" encoding="UTF-8"?>
<!-- Stylesheet of the xalan workload (XalanWorkload.java): a sales report over the generated catalog.
     Muenchian grouping with keys, sorting, string functions, number formatting, a divide-and-conquer recursive
     sum, and a parameter that changes the output from one transformation to the next. XSLT 1.0. -->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
  <xsl:output method="html" encoding="UTF-8" indent="yes"/>
  <xsl:param name="min-price" select="0"/>
  <xsl:param name="top" select="15"/>

  <xsl:key name="by-category" match="item" use="@category"/>
  <xsl:key name="by-category-region" match="item" use="concat(@category, '|', @region)"/>
  <xsl:key name="by-tag" match="tag" use="."/>

  <xsl:variable name="lower" select="'abcdefghijklmnopqrstuvwxyz'"/>
  <xsl:variable name="upper" select="'ABCDEFGHIJKLMNOPQRSTUVWXYZ'"/>
  <xsl:variable name="regions" select="/catalog/item[generate-id() = generate-id(key('by-category-region',
      concat(@category, '|', @region))[1]) and @category = /catalog/item[1]/@category]/@region"/>

  <!-- Sum of price * qty over a node set, splitting it in halves (recursion depth log2 of its size). -->
  <xsl:template name="value">
    <xsl:param name="items"/>
    <xsl:variable name="n" select="count($items)"/>
    <xsl:choose>
      <xsl:when test="$n = 0">0</xsl:when>
      <xsl:when test="$n = 1"><xsl:value-of select="$items/@price * $items/@qty"/></xsl:when>
      <xsl:otherwise>
        <xsl:variable name="half" select="floor($n div 2)"/>
        <xsl:variable name="left">
          <xsl:call-template name="value">
            <xsl:with-param name="items" select="$items[position() &lt;= $half]"/>
          </xsl:call-template>
        </xsl:variable>
        <xsl:variable name="right">
          <xsl:call-template name="value">
            <xsl:with-param name="items" select="$items[position() &gt; $half]"/>
          </xsl:call-template>
        </xsl:variable>
        <xsl:value-of select="$left + $right"/>
      </xsl:otherwise>
    </xsl:choose>
  </xsl:template>

  <xsl:template match="/catalog">
    <html>
      <head><title>Catalog report (min price <xsl:value-of select="$min-price"/>)</title></head>
      <body>
        <h1><xsl:value-of select="count(item)"/> items,
          <xsl:value-of select="count(item[@price &gt;= $min-price])"/> at or above
          <xsl:value-of select="format-number($min-price, '#,##0.00')"/></h1>
        <xsl:for-each select="item[generate-id() = generate-id(key('by-category', @category)[1])]">
          <xsl:sort select="@category"/>
          <xsl:variable name="category" select="@category"/>
          <xsl:variable name="members" select="key('by-category', $category)[@price &gt;= $min-price]"/>
          <h2 id="{translate($category, $lower, $upper)}">
            <xsl:value-of select="concat(translate(substring($category, 1, 1), $lower, $upper),
                substring($category, 2))"/>
          </h2>
          <p>
            <xsl:value-of select="count($members)"/> items, mean price
            <xsl:value-of select="format-number(sum($members/@price) div count($members), '#,##0.00')"/>,
            stock value
            <xsl:variable name="value">
              <xsl:call-template name="value"><xsl:with-param name="items" select="$members"/></xsl:call-template>
            </xsl:variable>
            <xsl:value-of select="format-number($value, '#,##0.00')"/>
          </p>
          <table>
            <tr>
              <xsl:for-each select="$regions">
                <xsl:sort select="."/>
                <th><xsl:value-of select="."/></th>
              </xsl:for-each>
            </tr>
            <tr>
              <xsl:for-each select="$regions">
                <xsl:sort select="."/>
                <td><xsl:value-of select="count(key('by-category-region', concat($category, '|', .))
                    [@price &gt;= $min-price])"/></td>
              </xsl:for-each>
            </tr>
          </table>
          <ol>
            <xsl:for-each select="$members">
              <xsl:sort select="@price" data-type="number" order="descending"/>
              <xsl:sort select="name"/>
              <xsl:if test="position() &lt;= $top">
                <li class="{substring-before(name, ' ')}">
                  <xsl:value-of select="translate(name, $lower, $upper)"/>
                  <xsl:text> — </xsl:text>
                  <xsl:value-of select="format-number(@price, '#,##0.00')"/>
                  <xsl:text> (</xsl:text>
                  <xsl:value-of select="string-length(description)"/>
                  <xsl:text> chars; </xsl:text>
                  <xsl:value-of select="substring-after(description, 'the ')"/>
                  <xsl:text>)</xsl:text>
                </li>
              </xsl:if>
            </xsl:for-each>
          </ol>
        </xsl:for-each>
        <h2>Tags</h2>
        <ul>
          <xsl:for-each select="item/tags/tag[generate-id() = generate-id(key('by-tag', .)[1])]">
            <xsl:sort select="count(key('by-tag', .))" data-type="number" order="descending"/>
            <xsl:sort select="."/>
            <li><xsl:value-of select="."/>: <xsl:value-of select="count(key('by-tag', .)
                [../../@price &gt;= $min-price])"/></li>
          </xsl:for-each>
        </ul>
      </body>
    </html>
  </xsl:template>
</xsl:stylesheet>
